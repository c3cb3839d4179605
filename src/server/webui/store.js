// Conversations, settings and the API key, kept in this browser's
// localStorage (nothing is stored on the server).
const KEY_CONVERSATIONS = 'ferrite.conversations';
const KEY_CURRENT = 'ferrite.current';
const KEY_SETTINGS = 'ferrite.settings';
const KEY_API = 'ferrite.apiKey';

function read(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch {
    return fallback;  // unreadable or not JSON: start afresh
  }
}

function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
    return true;
  } catch {
    return false;  // full or refused (private browsing): the page goes on
  }
}

// [{id, title, updated, messages: [{role, content, state?, stats?}]}], newest first.
export function loadConversations() {
  const list = read(KEY_CONVERSATIONS, []);
  if (!Array.isArray(list)) return [];
  return list.filter((c) => c && typeof c.id === 'string' && Array.isArray(c.messages));
}

export function saveConversations(list) {
  return write(KEY_CONVERSATIONS, list);
}

export function loadCurrentId() {
  return read(KEY_CURRENT, null);
}

export function saveCurrentId(id) {
  write(KEY_CURRENT, id);
}

export function loadSettings() {
  const s = read(KEY_SETTINGS, {});
  return s && typeof s === 'object' && !Array.isArray(s) ? s : {};
}

export function saveSettings(settings) {
  write(KEY_SETTINGS, settings);
}

export function loadApiKey() {
  const k = read(KEY_API, '');
  return typeof k === 'string' ? k : '';
}

export function saveApiKey(key) {
  write(KEY_API, key);
}

export function newConversation() {
  const id = `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  return { id, title: 'New chat', updated: Date.now(), messages: [] };
}
