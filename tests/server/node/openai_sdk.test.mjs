// `ferrite serve` driven by the official OpenAI SDK for Node, over loopback.
// Expected values come from the shared goldens (stories260K's greedy text,
// the bert-bge tokenizer ids), from an independent reference (the Python
// BERT forward of tests/python/tiny_gguf.py), or from the API's contract.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import OpenAI, { AuthenticationError, BadRequestError, NotFoundError } from 'openai';

import { sharedFile, startServer } from './server_process.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const STORIES = sharedFile('models/stories260K.gguf');
const GREEDY = sharedFile('models/stories260K.greedy200.txt');
const BERT_VOCAB = sharedFile('vocab/ggml-vocab-bert-bge.gguf');
const skip = !STORIES || !GREEDY || !BERT_VOCAB ? 'shared test data missing' : false;

const MODEL_ID = 'stories260K';
const API_KEY = 'sk-ferrite-test';
// Tolerance of the tiny BERT against the double-precision reference (values of
// order 1 after LayerNorm; float32 and the f16 GELU table).
const EMBED_TOLERANCE = 5e-3;

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ferrite-sdk-'));
const servers = [];
let stories; // default chat template
let silent; // a chat template that renders no text: the prompt is BOS alone
let bert;
let keyed;
let golden = '';
let bertReference;

function client(server, apiKey = 'unused') {
  return new OpenAI({ baseURL: `${server.base}/v1`, apiKey, maxRetries: 0, timeout: 120_000 });
}

before(async () => {
  if (skip) return;
  golden = readFileSync(GREEDY, 'utf8');
  const template = path.join(tmp, 'silent.jinja');
  writeFileSync(template, '{% for message in messages %}{% endfor %}');
  // The tiny BERT and its reference embeddings: [CLS] ... [SEP] around the
  // golden ids of "ied 4 ½ months" (first line of ggml-vocab-bert-bge.gguf.out).
  const bertPath = path.join(tmp, 'tiny-bert.gguf');
  const lists = [[101, 29464, 2094, 1018, 1092, 2706, 102], [101, 7592, 2088, 102]];
  const out = execFileSync('python3', [path.join(HERE, 'tiny_bert.py'), BERT_VOCAB, bertPath, JSON.stringify(lists)]);
  bertReference = { lists, ...JSON.parse(out.toString()) };
  [stories, silent, bert, keyed] = await Promise.all([
    startServer(STORIES, ['--alias', MODEL_ID, '--parallel', '2', '-c', '2048']),
    startServer(STORIES, ['--alias', MODEL_ID, '--chat-template', template]),
    startServer(bertPath, ['--alias', 'tiny-bert']),
    startServer(STORIES, ['--alias', MODEL_ID, '--api-key', API_KEY]),
  ]);
  servers.push(stories, silent, bert, keyed);
});

after(async () => {
  const results = await Promise.all(servers.map((s) => s.stop()));
  rmSync(tmp, { recursive: true, force: true });
  for (const r of results) assert.deepEqual(r, { code: 0, signal: null }, 'ferrite serve exits 0 on SIGTERM');
});

async function collectStream(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('completions', { skip }, () => {
  test('non-streamed greedy text is the golden continuation of BOS', async () => {
    const r = await client(stories).completions.create({ model: MODEL_ID, prompt: '', max_tokens: 200, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, MODEL_ID);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].text, golden);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens], [1, 200, 201]);
  });

  test('streamed pieces concatenate to the golden text, usage last', async () => {
    const stream = await client(stories).completions.create({
      model: MODEL_ID, prompt: '', max_tokens: 200, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collectStream(stream);
    assert.ok(chunks.length > 2);
    const text = chunks.filter((c) => c.choices.length).map((c) => c.choices[0].text).join('');
    assert.equal(text, golden);
    const finishes = chunks.flatMap((c) => c.choices.map((x) => x.finish_reason)).filter((f) => f);
    assert.deepEqual(finishes, ['length']);
    assert.equal(chunks.at(-1).usage.completion_tokens, 200);
  });

  test('a stop string ends the text before it', async () => {
    const r = await client(stories).completions.create({
      model: MODEL_ID, prompt: '', max_tokens: 200, temperature: 0, stop: ['Lily'],
    });
    assert.equal(r.choices[0].text, golden.slice(0, golden.indexOf('Lily')));
    assert.equal(r.choices[0].finish_reason, 'stop');
  });
});

describe('chat completions', { skip }, () => {
  const messages = [{ role: 'user', content: 'Tell me a story' }];

  test('non-streamed reply of an empty rendered prompt is the golden continuation', async () => {
    const r = await client(silent).chat.completions.create({
      model: MODEL_ID, messages, max_completion_tokens: 120, temperature: 0,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    const text = r.choices[0].message.content;
    assert.ok(text.length > 100);
    assert.equal(text, golden.slice(0, text.length));
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 120);
    assert.equal(r.usage.prompt_tokens, 1);
  });

  test('streamed deltas equal the whole reply (greedy) with the default template', async () => {
    const c = client(stories);
    const req = { model: MODEL_ID, messages, max_completion_tokens: 32, temperature: 0 };
    const whole = await c.chat.completions.create(req);
    const chunks = await collectStream(await c.chat.completions.create({
      ...req, stream: true, stream_options: { include_usage: true },
    }));
    for (const ch of chunks) assert.equal(ch.object, 'chat.completion.chunk');
    const withChoices = chunks.filter((ch) => ch.choices.length);
    assert.equal(withChoices[0].choices[0].delta.role, 'assistant');
    const text = withChoices.map((ch) => ch.choices[0].delta.content ?? '').join('');
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(withChoices.at(-1).choices[0].finish_reason, 'length');
    assert.equal(chunks.at(-1).usage.completion_tokens, 32);
    assert.equal(whole.usage.completion_tokens, 32);
  });

  test('the SDK stream helper assembles the same message', async () => {
    const c = client(silent);
    const runner = c.chat.completions.stream({ model: MODEL_ID, messages, max_completion_tokens: 60, temperature: 0 });
    const done = await runner.finalChatCompletion();
    const text = done.choices[0].message.content;
    assert.equal(text, golden.slice(0, text.length));
    assert.ok(text.length > 40);
  });

  test('response_format json_schema: content parses and validates', async () => {
    const schema = {
      type: 'object',
      properties: { ok: { type: 'boolean' }, color: { enum: ['red', 'green'] }, count: { type: 'integer', minimum: 1, maximum: 9 } },
      required: ['ok', 'color', 'count'],
      additionalProperties: false,
    };
    for (const seed of [0, 1, 2]) {
      const r = await client(stories).chat.completions.create({
        model: MODEL_ID,
        messages: [{ role: 'user', content: 'json please' }],
        max_tokens: 100,
        temperature: 1,
        seed,
        response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema } },
      });
      assert.equal(r.choices[0].finish_reason, 'stop');
      const v = JSON.parse(r.choices[0].message.content);
      assert.deepEqual(Object.keys(v).sort(), ['color', 'count', 'ok']);
      assert.equal(typeof v.ok, 'boolean');
      assert.ok(['red', 'green'].includes(v.color), v.color);
      assert.ok(Number.isInteger(v.count) && v.count >= 1 && v.count <= 9, String(v.count));
    }
  });
});

describe('tool calls', { skip }, () => {
  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather of a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  }];
  const question = { role: 'user', content: 'What is the weather in Paris?' };

  // stories260K was never trained on tools: tool_choice "required" makes the
  // server constrain the reply to a call of an offered tool (a grammar).
  test('round trip: required call, tool result, then a plain reply', async () => {
    const c = client(stories);
    const first = await c.chat.completions.create({
      model: MODEL_ID, messages: [question], tools, tool_choice: 'required', max_tokens: 60, temperature: 0.8, seed: 3,
    });
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.role, 'assistant');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.ok(call.id.length > 0);
    const args = JSON.parse(call.function.arguments);
    assert.ok(['Paris', 'Oslo'].includes(args.city), call.function.arguments);

    const second = await c.chat.completions.create({
      model: MODEL_ID,
      messages: [question, choice.message, { role: 'tool', tool_call_id: call.id, content: '{"sky": "sunny"}' }],
      tools,
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(second.object, 'chat.completion');
    assert.equal(typeof second.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(second.choices[0].finish_reason));
  });

  test('a named function, streamed, assembles into one call', async () => {
    const runner = client(stories).chat.completions.stream({
      model: MODEL_ID, messages: [question], tools, max_tokens: 60, temperature: 0.8, seed: 4,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const done = await runner.finalChatCompletion();
    const call = done.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    assert.ok(['Paris', 'Oslo'].includes(JSON.parse(call.function.arguments).city));
    assert.equal(done.choices[0].finish_reason, 'tool_calls');
  });
});

describe('embeddings', { skip }, () => {
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  // OpenAI's embeddings have length 1: the reference, normalized.
  const unit = (v) => v.map((x) => x / norm(v));
  function assertClose(got, want) {
    assert.equal(got.length, want.length);
    got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= EMBED_TOLERANCE, `[${i}] ${g} vs ${want[i]}`));
  }

  test('token ids and text match the reference (base64, the SDK default, and float)', async () => {
    const c = client(bert);
    const [ids, other] = bertReference.lists;
    const want = bertReference.reference.map(unit);
    const b64 = await c.embeddings.create({ model: 'tiny-bert', input: [ids, other] });
    assert.equal(b64.object, 'list');
    assert.equal(b64.model, 'tiny-bert');
    assert.deepEqual(b64.data.map((d) => d.index), [0, 1]);
    assertClose(b64.data[0].embedding, want[0]);
    assertClose(b64.data[1].embedding, want[1]);
    assert.equal(b64.usage.prompt_tokens, ids.length + other.length);

    const floats = await c.embeddings.create({ model: 'tiny-bert', input: 'ied 4 ½ months', encoding_format: 'float' });
    assertClose(floats.data[0].embedding, want[0]);
    assert.ok(Math.abs(norm(floats.data[0].embedding) - 1) < 1e-4);
  });

  test('a generator refuses embeddings with a 400', async () => {
    await assert.rejects(client(stories).embeddings.create({ model: MODEL_ID, input: 'hi' }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.code, 'embeddings_not_supported');
      return true;
    });
  });
});

describe('models and errors', { skip }, () => {
  test('models list names the served model', async () => {
    const page = await client(stories).models.list();
    const ids = page.data.map((m) => m.id);
    assert.deepEqual(ids, [MODEL_ID]);
    assert.equal(page.data[0].object, 'model');
    assert.equal(typeof page.data[0].created, 'number');
  });

  test('401 without the right key, 200 with it', async () => {
    await assert.rejects(client(keyed, 'wrong').models.list(), (e) => {
      assert.ok(e instanceof AuthenticationError);
      assert.equal(e.status, 401);
      assert.equal(e.code, 'invalid_api_key');
      return true;
    });
    const page = await client(keyed, API_KEY).models.list();
    assert.equal(page.data[0].id, MODEL_ID);
  });

  test('400 for an out-of-range field and for a body that is not JSON', async () => {
    await assert.rejects(client(stories).chat.completions.create({
      model: MODEL_ID, messages: [{ role: 'user', content: 'x' }], temperature: 7,
    }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.status, 400);
      assert.equal(e.param, 'temperature');
      assert.equal(e.type, 'invalid_request_error');
      return true;
    });
    await assert.rejects(client(stories).chat.completions.create({ model: MODEL_ID }), BadRequestError);
    const raw = await fetch(`${stories.base}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"messages": [',
    });
    assert.equal(raw.status, 400);
    assert.equal((await raw.json()).error.type, 'invalid_request_error');
  });

  test('any model name is the served model (as with llama-server); 404 for an unknown route', async () => {
    const r = await client(stories).completions.create({ model: 'gpt-9', prompt: 'x', max_tokens: 1 });
    assert.equal(r.choices.length, 1);
    await assert.rejects(client(stories).get('/nowhere'), (e) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.status, 404);
      return true;
    });
  });
});
