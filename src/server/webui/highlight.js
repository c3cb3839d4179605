// A compact syntax highlighter for code blocks: one scanner driven by a
// small table per language (keywords, literals, comment and string forms).
// It returns DOM nodes (spans with classes tok-*, text nodes), never HTML.
const words = (s) => new Set(s.split(' '));

const C_LIKE = {
  line: ['//'], block: [['/*', '*/']], strings: ['"', "'"],
  literals: words('true false null nullptr NULL'),
};
const LANGS = {
  c: { ...C_LIKE, preprocessor: true, keywords: words('auto break case char const continue default do double else enum extern float for goto if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while bool size_t uint8_t int8_t uint16_t int16_t uint32_t int32_t uint64_t int64_t') },
  cpp: { ...C_LIKE, preprocessor: true, keywords: words('alignas alignof auto bool break case catch char class concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern final float for friend goto if inline int long mutable namespace new noexcept operator override private protected public register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template this thread_local throw try typedef typeid typename union unsigned using virtual void volatile while std string vector size_t') },
  js: { ...C_LIKE, strings: ['"', "'", '`'], literals: words('true false null undefined NaN Infinity'), keywords: words('async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield interface type enum implements declare readonly public private protected abstract as keyof number string boolean any unknown never') },
  python: { line: ['#'], block: [], strings: ['"""', "'''", '"', "'"], literals: words('True False None'), keywords: words('and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self print len range int str float list dict set tuple') },
  rust: { ...C_LIKE, literals: words('true false None Some Ok Err'), keywords: words('as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box') },
  go: { ...C_LIKE, strings: ['"', "'", '`'], literals: words('true false nil iota'), keywords: words('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 float32 float64 string bool byte rune error any') },
  java: { ...C_LIKE, literals: words('true false null'), keywords: words('abstract assert boolean break byte case catch char class const continue default do double else enum extends final finally float for goto if implements import instanceof int interface long native new package private protected public return short static strictfp super switch synchronized this throw throws transient try var void volatile while record String') },
  shell: { line: ['#'], block: [], strings: ['"', "'"], variables: true, literals: words('true false'), keywords: words('if then else elif fi for while until do done case esac in function return local export readonly set unset shift exit echo cd source alias sudo') },
  json: { line: [], block: [], strings: ['"'], literals: words('true false null'), keywords: new Set() },
  sql: { line: ['--'], block: [['/*', '*/']], strings: ["'", '"'], literals: words('NULL TRUE FALSE null true false'), keywords: words('SELECT FROM WHERE AND OR NOT INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP ALTER INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT AS DISTINCT UNION PRIMARY KEY select from where and or not insert into values update set delete create table drop alter index join left right inner outer on group by order having limit as distinct union primary key') },
  css: { line: [], block: [['/*', '*/']], strings: ['"', "'"], literals: new Set(), keywords: words('important media import from to') },
};
const ALIASES = {
  h: 'c', hpp: 'cpp', 'c++': 'cpp', cc: 'cpp', cxx: 'cpp', cuda: 'cpp', javascript: 'js', mjs: 'js', jsx: 'js',
  ts: 'js', typescript: 'js', tsx: 'js', py: 'python', python3: 'python', rs: 'rust', golang: 'go', kotlin: 'java',
  cs: 'java', csharp: 'java', sh: 'shell', bash: 'shell', zsh: 'shell', console: 'shell', jsonc: 'json',
};

export function languageOf(name) {
  const n = String(name || '').toLowerCase();
  return LANGS[n] ? n : ALIASES[n] || null;
}

const NUMBER = /(0[xX][\da-fA-F_]+|0[bB][01_]+|(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][+-]?\d+)?)[a-zA-Z]*/y;
const IDENT = /[A-Za-z_$][\w$]*/y;
const VARIABLE = /\$(\{[^}\n]*\}|[A-Za-z_]\w*|[0-9#?@*$!-])/y;

function match(re, text, i) {
  re.lastIndex = i;
  const m = re.exec(text);
  return m ? m[0] : '';
}

// The end of a string opened by `q` at `i` (escapes skipped; single-line
// quotes stop at the line's end).
function stringEnd(text, i, q) {
  const multi = q.length === 3 || q === '`';
  for (let j = i + q.length; j < text.length; j++) {
    if (text[j] === '\\') { j++; continue; }
    if (text.startsWith(q, j)) return j + q.length;
    if (text[j] === '\n' && !multi) return j;
  }
  return text.length;
}

// The code as a fragment of spans; a language it does not know stays plain.
export function highlight(code, name) {
  const frag = document.createDocumentFragment();
  const lang = LANGS[languageOf(name)];
  if (!lang) {
    frag.append(code);
    return frag;
  }
  let plain = '';
  const push = (cls, text) => {
    if (plain) { frag.append(plain); plain = ''; }
    const span = document.createElement('span');
    span.className = `tok-${cls}`;
    span.textContent = text;
    frag.append(span);
  };
  let lineStart = true;
  for (let i = 0; i < code.length;) {
    const c = code[i];
    let tok;
    if (c === '\n' || c === ' ' || c === '\t') {
      plain += c;
      if (c === '\n') lineStart = true;
      i++;
      continue;
    }
    const atLineStart = lineStart;
    lineStart = false;
    if (lang.preprocessor && atLineStart && c === '#') {
      const end = code.indexOf('\n', i);
      tok = code.slice(i, end < 0 ? code.length : end);
      push('meta', tok);
    } else if ((tok = lang.line.find((p) => code.startsWith(p, i)))) {
      const end = code.indexOf('\n', i);
      tok = code.slice(i, end < 0 ? code.length : end);
      push('comment', tok);
    } else if ((tok = lang.block.find(([open]) => code.startsWith(open, i)))) {
      const end = code.indexOf(tok[1], i + tok[0].length);
      tok = code.slice(i, end < 0 ? code.length : end + tok[1].length);
      push('comment', tok);
    } else if ((tok = lang.strings.find((q) => code.startsWith(q, i)))) {
      tok = code.slice(i, stringEnd(code, i, tok));
      push('string', tok);
    } else if (lang.variables && c === '$' && (tok = match(VARIABLE, code, i))) {
      push('variable', tok);
    } else if (/[\d.]/.test(c) && (tok = match(NUMBER, code, i)) && tok !== '.') {
      push('number', tok);
    } else if ((tok = match(IDENT, code, i))) {
      if (lang.keywords.has(tok)) push('keyword', tok);
      else if (lang.literals.has(tok)) push('literal', tok);
      else if (code[i + tok.length] === '(') push('function', tok);
      else plain += tok;
    } else {
      tok = c;
      plain += c;
    }
    i += tok.length;
  }
  if (plain) frag.append(plain);
  return frag;
}
