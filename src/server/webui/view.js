// Drawing the page's parts from the state: the conversation list, the
// messages (markdown for the assistant, plain text for the user), the
// statistics line of each answer, and the model's facts.
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function renderConversationList(list, currentId, { onOpen, onDelete }) {
  const ul = $('conversations');
  ul.replaceChildren();
  for (const c of list) {
    const li = el('li', c.id === currentId ? 'current' : '');
    li.dataset.id = c.id;
    const open = el('button', 'open', c.title || 'New chat');
    open.type = 'button';
    open.addEventListener('click', () => onOpen(c.id));
    const del = el('button', 'delete', '×');
    del.type = 'button';
    del.title = 'Delete this conversation';
    del.addEventListener('click', () => onDelete(c.id));
    li.append(open, del);
    ul.append(li);
  }
}

function statsText(stats) {
  if (!stats) return '';
  const parts = [];
  if (stats.tokens !== undefined) parts.push(`${stats.tokens} tokens`);
  if (stats.tokensPerSecond) parts.push(`${stats.tokensPerSecond.toFixed(1)} tokens/s`);
  if (stats.promptTokens !== undefined) {
    parts.push(`prompt ${stats.promptTokens} tokens${stats.cachedTokens ? ` (${stats.cachedTokens} cached)` : ''}`);
  }
  if (stats.promptPerSecond) parts.push(`${stats.promptPerSecond.toFixed(1)} prompt tokens/s`);
  if (stats.finish) parts.push(`finish: ${stats.finish}`);
  return parts.join(' · ');
}

// Fills a message's element from the message (again while it streams).
export function updateMessage(node, m) {
  node.dataset.state = m.state || 'done';
  const content = node.querySelector('.content');
  if (m.role === 'assistant') content.replaceChildren(renderMarkdown(m.content));
  else content.textContent = m.content;
  const note = m.state === 'stopped' ? 'stopped' : m.state === 'error' ? `error: ${m.error || ''}` : '';
  node.querySelector('.note').textContent = note;
  node.querySelector('.stats').textContent = statsText(m.stats);
}

export function messageNode(m) {
  const node = el('article', `message ${m.role}`);
  node.dataset.role = m.role;
  node.append(el('div', 'role', m.role), el('div', 'content'), el('div', 'note'), el('div', 'stats'));
  updateMessage(node, m);
  return node;
}

export function renderMessages(messages) {
  const box = $('messages');
  box.replaceChildren(...messages.map(messageNode));
  box.scrollTop = box.scrollHeight;
}

export function renderModelInfo(props, models) {
  const model = models && models.data && models.data[0];
  $('model-name').textContent = (model && model.id) || (props && props.model) || 'model';
  const facts = [];
  if (props) {
    facts.push(['context per slot', props.n_ctx_slot ?? props.n_ctx], ['slots', props.total_slots]);
    if (props.chat_template_origin) facts.push(['chat template', props.chat_template_origin]);
  }
  if (model && model.meta) {
    facts.push(['trained context', model.meta.n_ctx_train], ['vocabulary', model.meta.n_vocab],
      ['embedding width', model.meta.n_embd]);
  }
  const dl = $('model-facts');
  dl.replaceChildren();
  for (const [k, v] of facts) {
    if (v === undefined || v === null) continue;
    dl.append(el('dt', '', k), el('dd', '', String(v)));
  }
}

export function setStatus(text, isError = false) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', isError);
}
