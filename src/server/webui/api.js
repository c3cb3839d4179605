// The server's API as the page uses it: JSON GETs and the streamed chat
// completion (server-sent events), with the API key when one is set.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let apiKey = '';
export function setApiKey(key) {
  apiKey = key || '';
}

function headers(extra = {}) {
  const h = { ...extra };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

async function errorOf(res) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, message);
}

export async function getJson(path) {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

// Splits a text/event-stream into the data of each event.
async function* sseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''));
      if (data.length) yield data.join('\n');
    }
  }
}

// POSTs a chat request with stream: true and calls onDelta(text) for each
// piece of the answer. Resolves to {finish, usage, timings}; rejects with an
// ApiError for an error answer or event, or the fetch's AbortError when
// `signal` aborts.
export async function streamChat(request, { signal, onDelta }) {
  const res = await fetch('/v1/chat/completions', {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json' }),
    body: JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } }),
    signal,
  });
  if (!res.ok) throw await errorOf(res);
  const result = { finish: null, usage: null, timings: null };
  for await (const data of sseData(res.body)) {
    if (data === '[DONE]') break;
    const chunk = JSON.parse(data);
    if (chunk.error) throw new ApiError(chunk.error.code || 500, chunk.error.message || 'generation failed');
    const choice = chunk.choices && chunk.choices[0];
    if (choice && choice.delta && typeof choice.delta.content === 'string' && choice.delta.content) {
      onDelta(choice.delta.content);
    }
    if (choice && choice.finish_reason) result.finish = choice.finish_reason;
    if (chunk.timings) result.timings = chunk.timings;
    if (chunk.usage) result.usage = chunk.usage;
  }
  return result;
}
