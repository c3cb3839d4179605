// A small markdown renderer that builds DOM nodes: the model's text only
// ever becomes text nodes and attribute values set through the DOM (never
// HTML parsed by the browser), so no reply can inject markup or script.
// Blocks: paragraphs (a newline is a line break), headings, fenced code
// (highlighted), block quotes, lists (nested by indentation), tables,
// rules. Inline: code spans, **bold**, *italics*, ~~strike~~, links
// (http, https and mailto only) and bare http(s) addresses.
import { highlight } from './highlight.js';

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,12})([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const MAX_DEPTH = 16;  // nesting of quotes and lists rendered as blocks

function el(tag, className, children = []) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  for (const c of children) e.append(c);
  return e;
}

// ---- inline -------------------------------------------------------------

const SAFE_URL = /^(https?:\/\/|mailto:)/i;
const PUNCT = /[!-/:-@[-`{-~]/;

function link(href, children) {
  if (!SAFE_URL.test(href)) return children;  // other schemes (javascript:, data:) stay text
  const a = el('a', '', children);
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  return [a];
}

// The index of the closing `delim` after `from`, not inside a code span; -1 if none.
function closing(text, delim, from) {
  for (let i = from; i < text.length; i++) {
    if (text[i] === '\\') { i++; continue; }
    if (text[i] === '`') {
      const end = text.indexOf('`', i + 1);
      if (end < 0) return -1;
      i = end;
      continue;
    }
    if (text.startsWith(delim, i) && text[i - 1] !== ' ') return i;
  }
  return -1;
}

const wordChar = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);
const TICKS = /`+/y;
const LINK = /\[([^\]\n]+)\]\(\s*([^\s()]+)\s*\)/y;
const BARE_URL = /https?:\/\/[^\s<>"'`]+/iy;

function at(re, text, i) {
  re.lastIndex = i;
  return re.exec(text);
}

// Inline markdown as nodes. A delimiter whose closing search failed once is
// not searched for again (a later start finds no more), so text full of
// unmatched '*' or '`' takes linear time, not quadratic.
export function inline(text, depth = 0) {
  const out = [];
  const failed = new Set();
  let plain = '';
  const flush = () => { if (plain) { out.push(document.createTextNode(plain)); plain = ''; } };
  const inner = (s) => (depth < MAX_DEPTH ? inline(s, depth + 1) : [s]);
  const find = (delim, from) => {
    if (failed.has(delim)) return -1;
    const end = delim[0] === '`' ? text.indexOf(delim, from) : closing(text, delim, from);
    if (end < 0) failed.add(delim);
    return end;
  };
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '\\' && PUNCT.test(text[i + 1] || '')) { plain += text[i + 1]; i += 2; continue; }
    if (c === '\n') { flush(); out.push(document.createElement('br')); i++; continue; }
    if (c === '`') {
      const run = at(TICKS, text, i)[0];
      const end = find(run, i + run.length);
      if (end > 0) {
        flush();
        out.push(el('code', '', [text.slice(i + run.length, end).replace(/^ (.*) $/s, '$1')]));
        i = end + run.length;
        continue;
      }
      plain += run;
      i += run.length;
      continue;
    }
    const pair = text.slice(i, i + 2);
    if ((pair === '**' || pair === '__' || pair === '~~') && text[i + 2] && text[i + 2] !== ' ' &&
        (pair !== '__' || !wordChar(text[i - 1]))) {
      const end = find(pair, i + 3);
      if (end > 0) {
        flush();
        out.push(el(pair === '~~' ? 'del' : 'strong', '', inner(text.slice(i + 2, end))));
        i = end + 2;
        continue;
      }
    }
    if ((c === '*' || c === '_') && text[i + 1] && text[i + 1] !== ' ' && text[i + 1] !== c &&
        (c === '*' || !wordChar(text[i - 1]))) {
      const end = find(c, i + 2);
      if (end > 0 && (c === '*' || !wordChar(text[end + 1]))) {
        flush();
        out.push(el('em', '', inner(text.slice(i + 1, end))));
        i = end + 1;
        continue;
      }
    }
    if (c === '[') {
      const m = at(LINK, text, i);
      if (m) {
        flush();
        out.push(...link(m[2], inner(m[1])));
        i += m[0].length;
        continue;
      }
    }
    if ((c === 'h' || c === 'H') && !wordChar(text[i - 1])) {
      const m = at(BARE_URL, text, i);
      if (m) {
        const url = m[0].replace(/[.,;:!?)\]]+$/, '');
        flush();
        out.push(...link(url, [url]));
        i += url.length;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return out;
}

// ---- blocks -------------------------------------------------------------

function codeBlock(lines, lang) {
  const code = el('code', lang ? `language-${lang}` : '', [highlight(lines.join('\n'), lang)]);
  const copy = el('button', 'copy', ['Copy']);
  copy.type = 'button';
  copy.addEventListener('click', () => {
    if (navigator.clipboard) navigator.clipboard.writeText(code.textContent).catch(() => {});
  });
  return el('div', 'code-block', [el('div', 'code-head', [el('span', 'lang', [lang || 'text']), copy]), el('pre', '', [code])]);
}

function cells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((x) => x.trim().replace(/\\\|/g, '|'));
}

function table(head, rows, depth) {
  const row = (values, tag) => el('tr', '', values.map((v) => el(tag, '', inline(v, depth))));
  return el('div', 'table-wrap', [el('table', '', [el('thead', '', [row(head, 'th')]),
    el('tbody', '', rows.map((r) => row(head.map((_, k) => r[k] || ''), 'td')))])]);
}

// One list: its items' lines (continuations are indented past the marker).
function list(lines, start, depth) {
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const node = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) node.start = parseInt(first[2], 10);
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[4]];
    const pad = indent + m[2].length + 1;
    i++;
    while (i < lines.length) {
      const line = lines[i];
      const blankThenMore = line.trim() === '' && i + 1 < lines.length && /^\s/.test(lines[i + 1]) &&
        lines[i + 1].search(/\S/) > indent;
      if (line.trim() !== '' && (line.search(/\S/) > indent || !startsBlock(line) && body[body.length - 1].trim() !== '')) {
        body.push(line.search(/\S/) >= pad ? line.slice(pad) : line.trimStart());
      } else if (blankThenMore) {
        body.push('');
      } else {
        break;
      }
      i++;
    }
    node.append(el('li', '', [blocks(body, depth + 1)]));
  }
  return { node, next: i };
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

export function blocks(lines, depth = 0) {
  const frag = document.createDocumentFragment();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === '') { i++; continue; }
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !(lines[i].trim().startsWith(fence) && lines[i].trim().replace(/[`~]/g, '') === '')) {
        body.push(lines[i]);
        i++;
      }
      i++;  // the closing fence (an unclosed block runs to the end: a reply still streaming)
      frag.append(codeBlock(body, m[2].toLowerCase()));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      frag.append(el(`h${m[1].length}`, '', inline(m[2], depth)));
      i++;
      continue;
    }
    if (RULE.test(line)) { frag.append(el('hr')); i++; continue; }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ''));
      frag.append(el('blockquote', '', [depth < MAX_DEPTH ? blocks(body, depth + 1) : body.join('\n')]));
      continue;
    }
    if (ITEM.test(line) && depth < MAX_DEPTH) {
      const { node, next } = list(lines, i, depth);
      frag.append(node);
      i = next;
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const head = cells(line);
      const rows = [];
      i += 2;
      while (i < lines.length && lines[i].includes('|') && lines[i].trim() !== '') rows.push(cells(lines[i++]));
      frag.append(table(head, rows, depth));
      continue;
    }
    const para = [line];
    i++;
    while (i < lines.length && lines[i].trim() !== '' && !startsBlock(lines[i])) para.push(lines[i++]);
    frag.append(el('p', '', inline(para.join('\n'), depth)));
  }
  return frag;
}

// The markdown `text` as a fragment of DOM nodes.
export function renderMarkdown(text) {
  return blocks(String(text).replace(/\r\n?/g, '\n').split('\n'));
}
