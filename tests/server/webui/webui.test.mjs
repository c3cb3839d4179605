// The chat page of `ferrite serve` (src/server/webui/) in headless Chromium
// (Debian's chromium, driven by puppeteer-core): it loads, streams an
// answer, stops one, regenerates, keeps the conversation over a reload, and
// asks for the API key of a server that has one. Expected texts come from
// the server's non-streamed API (the same request, greedy), not from the
// page. Every wait is on a condition of the page or the server, none on
// time. A failure saves a screenshot ($FERRITE_WEBUI_ARTIFACTS, else the
// temporary folder) and prints its path.
//
// As root, Chromium runs only with --no-sandbox (its sandbox needs an
// unprivileged user namespace); the test passes it only then.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import puppeteer from 'puppeteer-core';

import { sharedFile, startServer } from '../node/server_process.mjs';

const STORIES = sharedFile('models/stories260K.gguf');
const skip = STORIES ? false : 'shared test data missing';
const MODEL_ID = 'stories260K';
const API_KEY = 'sk-ferrite-webui-test';
const CHROMIUM = process.env.FERRITE_CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.FERRITE_WEBUI_ARTIFACTS || os.tmpdir();
// A wait that fails (the page broke) rather than hangs: generous for a
// loaded 2-core machine and sanitizer builds.
const WAIT_MS = 60_000;
// An answer that cannot end before it is stopped: context shift goes on past
// the slot, and a million tokens take minutes.
// Pause between two /health polls (waiting for the server to cancel).
const POLL_MS = 20;
const ENDLESS = { max_tokens: 1_000_000, custom: '{"ignore_eos": true}' };

let plain;
let keyed;
let browser;

before(async () => {
  if (skip) return;
  [plain, keyed] = await Promise.all([
    startServer(STORIES, ['--alias', MODEL_ID, '-c', '1024']),
    startServer(STORIES, ['--alias', MODEL_ID, '-c', '1024', '--api-key', API_KEY]),
  ]);
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...(root ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});

after(async () => {
  if (browser) await browser.close();
  await Promise.all([plain, keyed].filter(Boolean).map((s) => s.stop()));
});

// Runs fn(page) on a fresh page of its own browser context (its own
// localStorage); on failure saves a screenshot and prints its path. Page
// errors (exceptions, CSP violations) fail the test.
async function withPage(name, fn, { allowConsole = () => false } = {}) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !allowConsole(m.text())) problems.push(`console error: ${m.text()}`);
  });
  try {
    await fn(page);
    assert.deepEqual(problems, []);
  } catch (e) {
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, `webui-${name}.png`);
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    console.error(`webui test '${name}' failed; screenshot: ${shot}`);
    if (problems.length) console.error(problems.join('\n'));
    throw e;
  } finally {
    await context.close();
  }
}

async function openPage(page, server) {
  await page.goto(`${server.base}/`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
}

async function waitModelName(page) {
  await page.waitForFunction((id) => document.getElementById('model-name').textContent === id, {}, MODEL_ID);
}

// Opens the settings, sets the fields given ({temperature: 0, ...}; '' clears
// one) and saves.
async function setSettings(page, fields) {
  await page.click('#open-settings');
  await page.waitForFunction(() => document.getElementById('settings').open);
  for (const [name, value] of Object.entries(fields)) {
    await page.$eval(`#set-${name}`, (el, v) => { el.value = v; }, String(value));
  }
  await page.click('#settings-save');
  await page.waitForFunction(() => !document.getElementById('settings').open);
}

async function sendMessage(page, text) {
  await page.type('#input', text);
  await page.click('#send');
}

// The last answer once its state is `state`: {content (as stored), text
// (as shown), chunks, stats}.
async function lastAnswer(page, state) {
  await page.waitForFunction((s) => {
    const all = document.querySelectorAll('.message.assistant');
    return all.length && all[all.length - 1].dataset.state === s;
  }, {}, state);
  return page.evaluate(() => {
    const all = document.querySelectorAll('.message.assistant');
    const node = all[all.length - 1];
    const list = JSON.parse(localStorage.getItem('ferrite.conversations'));
    const messages = list[0].messages;
    return {
      content: messages[messages.length - 1].content,
      text: node.querySelector('.content').textContent,
      chunks: Number(node.dataset.chunks || 0),
      stats: node.querySelector('.stats').textContent,
      messages,
    };
  });
}

// The same chat request through the non-streamed API.
async function reference(server, messages, fields, key) {
  const res = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ messages, ...fields }),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  return { content: body.choices[0].message.content, usage: body.usage };
}

const squeeze = (s) => s.replace(/\s+/g, '');

test('the page streams, stops, regenerates and keeps the conversation', { skip }, async () => {
  await withPage('chat', async (page) => {
    await openPage(page, plain);
    await waitModelName(page);
    const facts = await page.$eval('#model-facts', (dl) => dl.textContent);
    assert.match(facts, /context per slot1024/);

    // A greedy answer of 48 tokens, streamed.
    await setSettings(page, { temperature: 0, max_tokens: 48 });
    await sendMessage(page, 'Tell me a story.');
    const first = await lastAnswer(page, 'done');
    const want = await reference(plain, [{ role: 'user', content: 'Tell me a story.' }], { temperature: 0, max_tokens: 48 });
    assert.equal(first.content, want.content);
    assert.equal(squeeze(first.text), squeeze(want.content));
    assert.ok(first.chunks > 1, `the answer came in ${first.chunks} pieces`);
    assert.match(first.stats, new RegExp(`^${want.usage.completion_tokens} tokens · [0-9.]+ tokens/s`));

    // An answer that only ends when stopped: its text appears while it streams.
    await setSettings(page, ENDLESS);
    await sendMessage(page, 'And then?');
    await page.waitForFunction(() => {
      const all = document.querySelectorAll('.message.assistant');
      const last = all[all.length - 1];
      return all.length === 2 && last.dataset.state === 'streaming' &&
        last.querySelector('.content').textContent.length > 20;
    });
    assert.equal(await page.$eval('#stop', (b) => b.hidden), false);
    await page.click('#stop');
    const stopped = await lastAnswer(page, 'stopped');
    assert.ok(stopped.content.length > 20);
    assert.equal(await page.$eval('.message.assistant:last-of-type .note', (n) => n.textContent), 'stopped');
    // The server cancels the generation when the page aborts its request.
    for (const deadline = Date.now() + WAIT_MS; ;) {
      const health = await (await fetch(`${plain.base}/health`)).json();
      if (health.slots_processing === 0) break;
      assert.ok(Date.now() < deadline, 'the stopped generation still runs on the server');
      await new Promise((r) => setTimeout(r, POLL_MS));
    }

    // Regenerate replaces the stopped answer with a greedy one of 32 tokens.
    await setSettings(page, { max_tokens: 32, custom: '' });
    await page.click('#regenerate');
    const again = await lastAnswer(page, 'done');
    assert.deepEqual(again.messages.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
    const want2 = await reference(plain, [{ role: 'user', content: 'Tell me a story.' },
      { role: 'assistant', content: first.content }, { role: 'user', content: 'And then?' }],
    { temperature: 0, max_tokens: 32 });
    assert.equal(again.content, want2.content);

    // After a reload the conversation is listed and drawn as it was.
    const before = await page.$$eval('.message .content', (ns) => ns.map((n) => n.textContent));
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    const afterReload = await page.$$eval('.message .content', (ns) => ns.map((n) => n.textContent));
    assert.deepEqual(afterReload, before);
    assert.deepEqual(await page.$$eval('#conversations li .open', (ns) => ns.map((n) => n.textContent)),
      ['Tell me a story.']);
  });
});

test('the page asks for the API key of a server that has one', { skip }, async () => {
  // The page's first calls are refused (401) until it has the key.
  const allowConsole = (text) => /status of 401/.test(text);
  await withPage('api-key', async (page) => {
    await openPage(page, keyed);
    await page.waitForFunction(() => !document.getElementById('auth').hidden);
    await page.type('#auth-key', API_KEY);
    await page.click('#auth button[type=submit]');
    await waitModelName(page);
    assert.equal(await page.$eval('#auth', (f) => f.hidden), true);
    await setSettings(page, { temperature: 0, max_tokens: 16 });
    await sendMessage(page, 'Hello');
    const answer = await lastAnswer(page, 'done');
    const want = await reference(keyed, [{ role: 'user', content: 'Hello' }], { temperature: 0, max_tokens: 16 }, API_KEY);
    assert.equal(answer.content, want.content);
  }, { allowConsole });
});

// A stored answer with markup, a script link and code: drawn as text,
// elements built by the renderer, and highlighted spans; nothing runs.
test('the page draws markdown without running what it holds', { skip }, async () => {
  const hostile = [
    '# Title',
    'Some **bold**, *italic* and `code`; <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>',
    '[click](javascript:window.pwned=3) [site](https://example.com/a)',
    '',
    '- one',
    '- two',
    '',
    '```python',
    'def f(x):  # comment',
    '    return "<b>" + str(42)',
    '```',
  ].join('\n');
  await withPage('markdown', async (page) => {
    await openPage(page, plain);
    await page.evaluate((content) => {
      const conversation = { id: 'c1', title: 'stored', updated: 1,
        messages: [{ role: 'user', content: '<i>hi</i>' }, { role: 'assistant', content, state: 'done' }] };
      localStorage.setItem('ferrite.conversations', JSON.stringify([conversation]));
      localStorage.setItem('ferrite.current', JSON.stringify('c1'));
    }, hostile);
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    const seen = await page.evaluate(() => {
      const answer = document.querySelector('.message.assistant .content');
      return {
        pwned: window.pwned,
        injected: document.querySelectorAll('#messages img, #messages script, #messages i').length,
        h1: answer.querySelector('h1')?.textContent,
        strong: answer.querySelector('strong')?.textContent,
        em: answer.querySelector('em')?.textContent,
        items: [...answer.querySelectorAll('ul > li')].map((li) => li.textContent),
        links: [...answer.querySelectorAll('a')].map((a) => a.getAttribute('href')),
        keywords: [...answer.querySelectorAll('pre .tok-keyword')].map((n) => n.textContent),
        strings: [...answer.querySelectorAll('pre .tok-string')].map((n) => n.textContent),
        comments: [...answer.querySelectorAll('pre .tok-comment')].map((n) => n.textContent),
        code: answer.querySelector('pre').textContent,
        text: answer.textContent,
        user: document.querySelector('.message.user .content').textContent,
      };
    });
    assert.equal(seen.pwned, undefined);
    assert.equal(seen.injected, 0);
    assert.equal(seen.h1, 'Title');
    assert.equal(seen.strong, 'bold');
    assert.equal(seen.em, 'italic');
    assert.deepEqual(seen.items, ['one', 'two']);
    assert.deepEqual(seen.links, ['https://example.com/a']);
    assert.ok(seen.text.includes('<img src=x onerror="window.pwned=1">'));
    assert.ok(seen.text.includes('<script>window.pwned=2</script>'));
    assert.ok(seen.text.includes('click site'));  // a javascript: link keeps its text, not the link
    assert.deepEqual(seen.keywords, ['def', 'return', 'str']);
    assert.deepEqual(seen.strings, ['"<b>"']);
    assert.deepEqual(seen.comments, ['# comment']);
    assert.equal(seen.code, 'def f(x):  # comment\n    return "<b>" + str(42)');
    assert.equal(seen.user, '<i>hi</i>');
  });
});

