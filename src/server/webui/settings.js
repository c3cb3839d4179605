// The settings dialog: system prompt, sampler fields and extra request
// fields, kept in localStorage; and the request body they make.
const NUMBERS = ['temperature', 'top_p', 'top_k', 'min_p', 'repeat_penalty', 'max_tokens', 'seed'];
const INTEGERS = new Set(['top_k', 'max_tokens', 'seed']);

const $ = (id) => document.getElementById(id);

// The form's values as settings; throws an Error naming a bad field.
export function readForm() {
  const s = { system: $('set-system').value, custom: $('set-custom').value.trim() };
  for (const name of NUMBERS) {
    const text = $(`set-${name}`).value.trim();
    if (text === '') continue;
    const v = Number(text);
    if (!Number.isFinite(v) || (INTEGERS.has(name) && !Number.isInteger(v))) {
      throw new Error(`${name}: '${text}' is not ${INTEGERS.has(name) ? 'an integer' : 'a number'}`);
    }
    s[name] = v;
  }
  if (s.custom) {
    let extra;
    try {
      extra = JSON.parse(s.custom);
    } catch (e) {
      throw new Error(`more request fields: ${e.message}`);
    }
    if (!extra || typeof extra !== 'object' || Array.isArray(extra)) {
      throw new Error('more request fields: give a JSON object, like {"ignore_eos": true}');
    }
  }
  return s;
}

export function fillForm(settings, apiKey) {
  $('set-system').value = settings.system || '';
  $('set-custom').value = settings.custom || '';
  for (const name of NUMBERS) $(`set-${name}`).value = settings[name] ?? '';
  $('set-api_key').value = apiKey || '';
}

// The chat request for `messages` ([{role, content}]) under `settings`.
export function chatRequest(settings, messages) {
  const body = {};
  if (settings.custom) Object.assign(body, JSON.parse(settings.custom));
  for (const name of NUMBERS) {
    if (settings[name] !== undefined) body[name] = settings[name];
  }
  const system = (settings.system || '').trim();
  body.messages = [...(system ? [{ role: 'system', content: system }] : []),
    ...messages.map((m) => ({ role: m.role, content: m.content }))];
  return body;
}
