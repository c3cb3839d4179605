// The chat page of `ferrite serve`: wires the controls to the state and the
// server. Conversations live in localStorage (store.js); answers stream
// from /v1/chat/completions (api.js) and are drawn as markdown (view.js).
import { ApiError, getJson, setApiKey, streamChat } from './api.js';
import { chatRequest, fillForm, readForm } from './settings.js';
import * as store from './store.js';
import { messageNode, renderConversationList, renderMessages, renderModelInfo, setStatus, updateMessage } from './view.js';

const $ = (id) => document.getElementById(id);
const TITLE_CHARS = 48;

const state = {
  conversations: store.loadConversations(),
  currentId: store.loadCurrentId(),
  settings: store.loadSettings(),
  apiKey: store.loadApiKey(),
  controller: null,  // the AbortController of the answer in progress
};

const current = () => state.conversations.find((c) => c.id === state.currentId) || null;

function save() {
  if (!store.saveConversations(state.conversations)) setStatus('could not save the conversations (storage full?)', true);
  store.saveCurrentId(state.currentId);
}

function refreshControls() {
  const busy = state.controller !== null;
  const c = current();
  const last = c && c.messages[c.messages.length - 1];
  $('send').disabled = busy;
  $('stop').hidden = !busy;
  $('regenerate').disabled = busy || !last;
  document.body.dataset.busy = busy ? 'true' : 'false';
}

function render() {
  renderConversationList(state.conversations, state.currentId, { onOpen: openConversation, onDelete: deleteConversation });
  const c = current();
  renderMessages(c ? c.messages : []);
  refreshControls();
}

function openConversation(id) {
  if (state.controller) return;
  state.currentId = id;
  save();
  render();
}

function deleteConversation(id) {
  if (state.controller && id === state.currentId) return;
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = null;
  save();
  render();
}

function needKey(message) {
  $('auth').hidden = false;
  setStatus(message, true);
  $('auth-key').focus();
}

async function loadModelInfo() {
  try {
    const [props, models] = await Promise.all([getJson('/props'), getJson('/v1/models')]);
    renderModelInfo(props, models);
    $('auth').hidden = true;
    setStatus('');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) needKey(e.message);
    else setStatus(`model information: ${e.message}`, true);
  }
}

// Streams the answer to the current conversation's messages into a new
// assistant message.
async function generate() {
  const c = current();
  if (!c || state.controller) return;
  const request = chatRequest(state.settings, c.messages);
  const answer = { role: 'assistant', content: '', state: 'streaming' };
  c.messages.push(answer);
  const node = messageNode(answer);
  $('messages').append(node);
  let chunks = 0;
  let drawn = false;
  let firstAt = 0;
  const draw = () => { drawn = false; updateMessage(node, answer); node.dataset.chunks = String(chunks); };
  state.controller = new AbortController();
  refreshControls();
  const started = performance.now();
  try {
    const r = await streamChat(request, {
      signal: state.controller.signal,
      onDelta(text) {
        if (!chunks) firstAt = performance.now();
        chunks++;
        answer.content += text;
        if (!drawn) { drawn = true; requestAnimationFrame(draw); }
      },
    });
    answer.state = 'done';
    answer.stats = statsOf(r, chunks, firstAt, started);
  } catch (e) {
    if (e.name === 'AbortError') {
      answer.state = 'stopped';
    } else {
      answer.state = 'error';
      answer.error = e.message;
      if (e instanceof ApiError && e.status === 401) needKey(e.message);
    }
  }
  state.controller = null;
  c.updated = Date.now();
  draw();
  save();
  refreshControls();
  $('messages').scrollTop = $('messages').scrollHeight;
}

// Tokens and speed: the server's timings when it sends them, else the usage
// over the time between the first and the last piece of text.
function statsOf(r, chunks, firstAt, started) {
  const s = { finish: r.finish || undefined };
  if (r.usage) {
    s.tokens = r.usage.completion_tokens;
    s.promptTokens = r.usage.prompt_tokens;
    s.cachedTokens = r.usage.prompt_tokens_details && r.usage.prompt_tokens_details.cached_tokens;
  }
  if (r.timings) {
    s.tokens = r.timings.predicted_n;
    s.tokensPerSecond = r.timings.predicted_per_second;
    s.promptPerSecond = r.timings.prompt_per_second;
  } else if (s.tokens > 1 && firstAt) {
    const seconds = (performance.now() - firstAt) / 1000;
    if (seconds > 0) s.tokensPerSecond = (s.tokens - 1) / seconds;
  }
  s.seconds = (performance.now() - started) / 1000;
  return s;
}

function send(event) {
  event.preventDefault();
  const text = $('input').value;
  if (!text.trim() || state.controller) return;
  let c = current();
  if (!c) {
    c = store.newConversation();
    state.conversations.unshift(c);
    state.currentId = c.id;
  }
  if (!c.messages.length) c.title = text.trim().slice(0, TITLE_CHARS);
  c.messages.push({ role: 'user', content: text });
  $('input').value = '';
  save();
  render();
  generate();
}

function regenerate() {
  const c = current();
  if (!c || state.controller || !c.messages.length) return;
  if (c.messages[c.messages.length - 1].role === 'assistant') c.messages.pop();
  save();
  render();
  generate();
}

function newChat() {
  if (state.controller) return;
  state.currentId = null;
  save();
  render();
  $('input').focus();
}

function openSettings() {
  fillForm(state.settings, state.apiKey);
  $('settings-error').textContent = '';
  $('settings').showModal();
}

function closeSettings(event) {
  if (event.submitter && event.submitter.value === 'save') {
    try {
      state.settings = readForm();
    } catch (e) {
      event.preventDefault();
      $('settings-error').textContent = e.message;
      return;
    }
    store.saveSettings(state.settings);
    useKey($('set-api_key').value.trim());
  }
}

function useKey(key) {
  state.apiKey = key;
  store.saveApiKey(key);
  setApiKey(key);
  loadModelInfo();
}

function init() {
  setApiKey(state.apiKey);
  if (state.currentId && !current()) state.currentId = null;
  $('composer').addEventListener('submit', send);
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => state.controller && state.controller.abort());
  $('regenerate').addEventListener('click', regenerate);
  $('new-chat').addEventListener('click', newChat);
  $('open-settings').addEventListener('click', openSettings);
  $('settings-form').addEventListener('submit', closeSettings);
  $('auth').addEventListener('submit', (e) => {
    e.preventDefault();
    useKey($('auth-key').value.trim());
  });
  render();
  loadModelInfo();
  document.body.dataset.ready = 'true';
}

init();
