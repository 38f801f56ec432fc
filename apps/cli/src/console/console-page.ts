// The console's pages: one self-contained HTML document (no external scripts, styles or fonts)
// routing on the URL fragment. Its one style and one script are allowed by hash in the CSP.

/** The page's style sheet (its hash is in the CSP). */
export const CONSOLE_STYLE = `
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #f5f6f8; }
body { margin: 0 auto; max-width: 1200px; padding: 16px 24px; }
header { display: flex; align-items: center; gap: 16px; flex-wrap: wrap; }
h1 { font-size: 20px; margin: 0; }
h2 { font-size: 15px; margin: 20px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: #4a5468; }
h3 { font-size: 14px; margin: 14px 0 4px; }
nav a { margin-right: 12px; color: #2456b3; text-decoration: none; font-weight: 600; font-size: 14px; }
nav a.on { color: #1d2330; border-bottom: 2px solid #2456b3; }
#status { color: #6b7385; font-size: 13px; margin-left: auto; }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid #dfe3ea; font-size: 13px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #eef0f4; vertical-align: top; }
th { background: #fafbfc; font-weight: 600; color: #4a5468; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: #2456b3; }
.pill { padding: 1px 8px; border-radius: 10px; font-size: 12px; white-space: nowrap; }
.ok { background: #dcf5e3; color: #17663a; } .bad { background: #fde2e1; color: #9b1c1c; } .mid { background: #fff1cc; color: #7a5300; }
.muted { color: #8a92a3; }
.box { padding: 8px 12px; font-size: 13px; margin-top: 10px; }
#warnings { background: #fde2e1; border: 1px solid #f1a7a3; color: #7f1d1d; }
#problems { background: #fff1cc; border: 1px solid #f0d68a; }
#flash { background: #e7effd; border: 1px solid #9db8ec; }
.hidden { display: none; }
.filters { display: flex; gap: 10px; align-items: center; font-size: 13px; margin: 6px 0; }
input, select, button { font: inherit; font-size: 13px; padding: 3px 6px; }
button { cursor: pointer; border: 1px solid #b8c0cf; background: #fff; border-radius: 4px; }
button.danger { border-color: #d98b87; color: #9b1c1c; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 10px; }
.chart { background: #fff; border: 1px solid #dfe3ea; padding: 6px 10px; font-size: 12px; }
.chart svg { display: block; width: 100%; height: 80px; }
.legend span { margin-right: 10px; }
.k-lag { color: #c2410c; } .k-in { color: #2456b3; } .k-out { color: #17663a; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; font-size: 13px; background: #fff; border: 1px solid #dfe3ea; padding: 8px 12px; margin: 0; }
dt { color: #4a5468; font-weight: 600; }
dd { margin: 0; }
code { font-size: 12px; word-break: break-all; }
code.key { display: inline-block; max-width: 300px; }
td.wrap { max-width: 460px; overflow-wrap: anywhere; }
td.nw { white-space: nowrap; }
`;

/** The page's script (its hash is in the CSP). */
export const CONSOLE_SCRIPT = `
const $ = (s) => document.querySelector(s);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const num = (n) => (n === null || n === undefined ? '<span class="muted">–</span>' : esc(n));
const time = (s) => (s ? esc(String(s).replace('T', ' ').slice(0, 19)) : '<span class="muted">–</span>');
const stateClass = (s) => (s === 'completed' || s === 'ok' ? 'ok' : ['failed', 'rejected', 'canceled', 'error', 'unknown'].includes(s) ? 'bad' : 'mid');
const pill = (s) => '<span class="pill ' + stateClass(s) + '">' + esc(s ?? '–') + '</span>';
const rows = (list, cols, empty) => (list.length ? list.join('') : '<tr><td colspan="' + cols + '" class="muted">' + esc(empty) + '</td></tr>');
const table = (id, head, body) => '<table id="' + id + '"><thead><tr>' + head.map((h) => '<th>' + h + '</th>').join('') + '</tr></thead><tbody>' + body + '</tbody></table>';
const taskLink = (agent, id) => '<a href="#/task/' + encodeURIComponent(agent) + '/' + encodeURIComponent(id) + '"><code>' + esc(id) + '</code></a>';
let timer;
let filter = { agent: '', state: '', tenant: '' };
let ops = false;

const tokenInput = $('#opsToken');
tokenInput.value = sessionStorage.getItem('opsToken') || '';
tokenInput.addEventListener('change', () => sessionStorage.setItem('opsToken', tokenInput.value));

async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store' });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || 'HTTP ' + res.status);
  return body;
}
function flash(text, result) {
  const f = $('#flash');
  f.textContent = text;
  f.classList.toggle('hidden', !text);
  f.dataset.result = result || 'ok';
}
async function act(path, body) {
  flash('working…', 'pending');
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + tokenInput.value },
    body: JSON.stringify(body || {}),
  });
  const out = await res.json().catch(() => ({}));
  if (!res.ok) {
    flash('refused (' + res.status + '): ' + (out.error || ''), 'error');
    return undefined;
  }
  return out;
}
function showProblems(list) {
  const p = $('#problems');
  p.classList.toggle('hidden', !list.length);
  p.innerHTML = list.map(esc).join('<br>');
}
function status(text) {
  $('#status').textContent = text;
}

function chart(points, key, color) {
  const w = 360, h = 70;
  if (points.length < 2) return '';
  const t0 = points[0].t, t1 = points[points.length - 1].t;
  const max = Math.max(1, ...points.map((p) => p[key]));
  const xy = points.map((p) => ((p.t - t0) / Math.max(1, t1 - t0)) * w + ',' + (h - (p[key] / max) * (h - 4) - 2)).join(' ');
  return '<polyline fill="none" stroke="' + color + '" stroke-width="1.8" points="' + xy + '"/>';
}
function charts(series) {
  const names = Object.keys(series.agents).sort();
  if (!names.length) return '<p class="muted">sampling every ' + series.intervalMs / 1000 + ' s; no command topic yet</p>';
  return '<div class="charts">' + names.map((a) => {
    const pts = series.agents[a];
    const last = pts[pts.length - 1] || { lag: 0, inPerSec: 0, outPerSec: 0 };
    const maxLag = Math.max(0, ...pts.map((p) => p.lag));
    const maxRate = Math.max(0, ...pts.map((p) => Math.max(p.inPerSec, p.outPerSec)));
    return '<div class="chart" data-chart="' + esc(a) + '"><b>' + esc(a) + '</b> <span class="muted">last ' + Math.round((pts.length ? pts[pts.length - 1].t - pts[0].t : 0) / 60000 * 10) / 10 + ' min</span>' +
      '<div class="legend"><span class="k-lag">lag ' + last.lag + ' (max ' + maxLag + ')</span></div>' +
      '<svg viewBox="0 0 360 70" preserveAspectRatio="none" role="img" aria-label="lag of ' + esc(a) + '">' + chart(pts, 'lag', '#c2410c') + '</svg>' +
      '<div class="legend"><span class="k-in">in ' + last.inPerSec.toFixed(1) + '/s</span><span class="k-out">done ' + last.outPerSec.toFixed(1) + '/s</span><span class="muted">max ' + maxRate.toFixed(1) + '/s</span></div>' +
      '<svg viewBox="0 0 360 70" preserveAspectRatio="none" role="img" aria-label="throughput of ' + esc(a) + '">' + chart(pts, 'inPerSec', '#2456b3') + chart(pts, 'outPerSec', '#17663a') + '</svg></div>';
  }).join('') + '</div>';
}

// ── overview ────────────────────────────────────────────────────────────────
function overviewSkeleton() {
  $('#main').innerHTML =
    '<div id="warnings" class="box hidden"></div>' +
    '<h2>Agents</h2><div id="agentsBox"></div>' +
    '<h2>Lag and throughput</h2><div id="chartsBox"></div>' +
    '<h2>Tasks</h2><div class="filters"><label>agent <select id="fAgent"><option value="">all</option></select></label>' +
    '<label>state <select id="fState"><option value="">all</option></select></label>' +
    '<label id="fTenantBox" class="hidden">tenant <input id="fTenant" size="14" placeholder="any (ops)"></label>' +
    '<button id="fApply">apply</button><button id="fClear">clear</button></div><div id="tasksBox"></div>' +
    '<h2>Unknown tool outcomes</h2><div id="unknownsBox"></div>' +
    '<h2>Teams and refusals</h2><div id="teamsBox"></div>';
  for (const s of ['submitted', 'working', 'input-required', 'auth-required', 'completed', 'failed', 'canceled', 'rejected', 'running'])
    $('#fState').insertAdjacentHTML('beforeend', '<option>' + s + '</option>');
  $('#fState').value = filter.state;
  $('#fTenant').value = filter.tenant;
  // Applied when chosen: a refresh in between must not undo a choice not yet applied.
  const apply = () => {
    filter = { agent: $('#fAgent').value, state: $('#fState').value, tenant: $('#fTenant').value.trim() };
    refreshOverview();
  };
  $('#fApply').addEventListener('click', apply);
  $('#fAgent').addEventListener('change', apply);
  $('#fState').addEventListener('change', apply);
  $('#fTenant').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') apply();
  });
  $('#fClear').addEventListener('click', () => {
    filter = { agent: '', state: '', tenant: '' };
    $('#fAgent').value = ''; $('#fState').value = ''; $('#fTenant').value = '';
    refreshOverview();
  });
  $('#unknownsBox').addEventListener('click', async (e) => {
    const b = e.target.closest('button[data-resolve]');
    if (!b) return;
    const out = await act('api/unknowns/' + encodeURIComponent(b.dataset.key) + '/resolve', { state: b.dataset.resolve });
    if (out) flash('resolved ' + out.key + ' as ' + out.state);
    refreshOverview();
  });
}
let overviewSeq = 0;
async function refreshOverview() {
  const seq = ++overviewSeq;
  try {
    const q = new URLSearchParams(Object.entries(filter).filter(([, v]) => v));
    const o = await getJson('api/overview?' + q);
    // An answer to an older request (another filter) arriving late is dropped.
    if (seq !== overviewSeq || !$('#fAgent')) return;
    ops = o.ops;
    $('#fTenantBox').classList.toggle('hidden', !ops);
    const sel = $('#fAgent');
    const have = [...sel.options].map((x) => x.value);
    for (const a of o.agents) if (!have.includes(a.id)) sel.insertAdjacentHTML('beforeend', '<option>' + esc(a.id) + '</option>');
    if (sel.value !== filter.agent && document.activeElement !== sel) sel.value = filter.agent;
    const w = $('#warnings');
    w.classList.toggle('hidden', !o.warnings.length);
    w.innerHTML = o.warnings.map((x) => '<div data-warning="' + esc(x.kind) + '" data-agent="' + esc(x.agent) + '">⚠ ' + esc(x.text) + (x.taskId ? ' ' + taskLink(x.agent, x.taskId) : '') + '</div>').join('');
    $('#agentsBox').innerHTML = table('agents', ['Agent', 'Health', 'Lag', 'Workers', 'In flight', 'Dead letters'], rows(o.agents.map((a) =>
      '<tr data-agent="' + esc(a.id) + '"><td><b>' + esc(a.id) + '</b> <span class="muted">' + esc(a.name) + '</span></td><td>' +
      (a.retired ? '<span class="pill bad">retired</span>' : a.healthy ? '<span class="pill ok">healthy</span>' : '<span class="pill mid">no heartbeat</span>') +
      '</td><td class="num">' + num(a.lag) + '</td><td class="num">' + num(a.members) + '</td><td class="num">' + num(a.inFlight) + '</td><td class="num">' + num(a.deadLetters) + '</td></tr>'), 6, 'no agents'));
    $('#chartsBox').innerHTML = charts(o.series);
    $('#tasksBox').innerHTML = table('tasks', ['Task', 'Agent', 'Tenant', 'State', 'Updated', 'Message'], rows(o.tasks.map((t) =>
      '<tr data-task="' + esc(t.id) + '"><td>' + taskLink(t.agent, t.id) + '</td><td class="nw">' + esc(t.agent) + '</td><td>' + (t.tenant ? esc(t.tenant) : '<span class="muted">yours</span>') +
      '</td><td>' + pill(t.state) + '</td><td>' + time(t.updated) + '</td><td>' + esc(t.message) + '</td></tr>'), 6, 'no tasks match'));
    $('#unknownsBox').innerHTML = table('unknowns', ['Idempotency key', 'Tool', 'Task', 'Tenant', 'Reason', 'Resolve (ops token)'], rows(o.unknowns.map((u) =>
      '<tr data-key="' + esc(u.key) + '"><td><code>' + esc(u.key) + '</code></td><td>' + esc(u.tool) + '</td><td><code>' + esc(u.taskId) + '</code></td><td>' + esc(u.tenant) + '</td><td>' + esc(u.reason) +
      '</td><td>' + ['ok', 'error', 'absent'].map((s) => '<button data-resolve="' + s + '" data-key="' + esc(u.key) + '">' + s + '</button>').join(' ') + '</td></tr>'), 6, 'none open'));
    $('#teamsBox').innerHTML = teamsSection(o.teams);
    showProblems(o.problems);
    status('updated ' + o.at.slice(11, 19) + ' UTC · refreshes every 2 s');
  } catch (err) {
    status('cannot load: ' + err.message);
  }
}

function teamsSection(t) {
  const unavailable = (id, why) => '<p id="' + id + '" class="muted" data-unavailable>unavailable: ' + esc(why) + '</p>';
  const counts = (id, list, empty) => table(id, ['Reason', 'Refused'], rows(list.map((r) =>
    '<tr data-reason="' + esc(r.reason) + '"><td>' + esc(r.reason) + '</td><td class="num">' + esc(r.count) + '</td></tr>'), 2, empty));
  return '<h3>Team bindings</h3>' + (t.teams ? table('teams', ['Team', 'Tenant', 'Kafka principal', 'Agents', 'Tool audiences', 'Key ids', 'Bound', 'State'], rows(t.teams.map((b) =>
    '<tr data-team="' + esc(b.name) + '"><td><b>' + esc(b.name) + '</b></td><td>' + esc(b.tenant) + '</td><td><code>' + esc(b.kafkaPrincipal ?? '–') + '</code></td><td>' + esc(b.agents.join(', ')) +
    '</td><td>' + esc(b.toolAudiences.join(', ') || '–') + '</td><td><code>' + esc(b.keyIds.join(', ')) + '</code></td><td>' + time(b.createdAt) + '</td><td>' +
    (b.revokedAt ? '<span class="pill bad">revoked</span> ' + time(b.revokedAt) : '<span class="pill ok">live</span>') + '</td></tr>'), 8, 'no team bound')) : unavailable('teamsUnavailable', t.teamsUnavailable)) +
    '<h3>Refused team events</h3>' + (t.refusedEvents ? counts('refusedEvents', t.refusedEvents, 'none refused') : unavailable('refusedEventsUnavailable', t.metricsUnavailable)) +
    '<h3>Refused token exchanges</h3>' + (t.refusedExchanges ? counts('refusedExchanges', t.refusedExchanges, 'none refused') : unavailable('refusedExchangesUnavailable', t.metricsUnavailable));
}

// ── task detail ─────────────────────────────────────────────────────────────
async function refreshTask(agent, id) {
  try {
    const d = await getJson('api/tasks/' + encodeURIComponent(agent) + '/' + encodeURIComponent(id));
    $('#detail').innerHTML =
      '<dl id="facts"><dt>Task</dt><dd><code>' + esc(d.id) + '</code></dd><dt>Agent</dt><dd>' + esc(d.agent) + '</dd><dt>Tenant</dt><dd>' + esc(d.tenant ?? '–') +
      '</dd><dt>State</dt><dd id="taskState">' + pill(d.state) + ' <span class="muted">' + time(d.updated) + '</span></dd><dt>Context</dt><dd><code>' + esc(d.contextId ?? '–') +
      '</code></dd><dt>Trace id</dt><dd id="traceId"><code>' + esc(d.traceId ?? '–') + '</code></dd><dt>Message</dt><dd>' + esc(d.message) + '</dd></dl>' +
      '<h2>Task tree</h2><p id="treeParent">' + (d.tree.parent ? 'Delegated by ' + taskLink(d.tree.parent.agent, d.tree.parent.id) + ' (' + esc(d.tree.parent.agent) + ')' : '<span class="muted">not delegated by another task</span>') + '</p>' +
      table('children', ['Step', 'Task', 'Agent', 'State'], rows(d.tree.children.map((c) =>
        '<tr data-child="' + esc(c.id) + '"><td class="num">' + c.step + '</td><td>' + (c.agent ? taskLink(c.agent, c.id) : '<code>' + esc(c.id) + '</code>') + '</td><td>' + esc(c.agent ?? '–') + '</td><td>' + (c.state ? pill(c.state) : '–') + '</td></tr>'), 4, 'delegated no work')) +
      '<h2>History</h2>' + table('history', ['Role', 'Message id', 'Text'], rows(d.history.map((m) => '<tr><td>' + esc(m.role) + '</td><td><code>' + esc(m.messageId) + '</code></td><td>' + esc(m.text) + '</td></tr>'), 3, 'no messages')) +
      '<h2>Artifacts</h2>' + table('artifacts', ['Name', 'Content'], rows(d.artifacts.map((a) => '<tr><td>' + esc(a.name) + '</td><td>' + esc(a.text) + '</td></tr>'), 2, 'no artifacts')) +
      '<h2>Execution attempts</h2>' + table('executions', ['Turn', 'Attempt', 'Ledger state', 'Outcome', 'Owner', 'Canceled', 'Trace id', 'Started', 'Finished'], rows(d.executions.map((e) =>
        '<tr data-execution="' + esc(e.executionId) + '"><td class="num">' + e.turn + '</td><td class="num">' + e.attempt + '</td><td>' + esc(e.state) + '</td><td>' + (e.finalState ? pill(e.finalState) : '–') +
        '</td><td><code>' + esc(e.owner) + '</code></td><td>' + (e.canceled ? 'yes' : 'no') + '</td><td><code>' + esc(e.traceId ?? '–') + '</code></td><td>' + time(e.createdAt) + '</td><td>' + time(e.finishedAt) + '</td></tr>'), 9, 'no execution in the ledger')) +
      '<h2>Tool calls and side effects</h2>' + table('effects', ['Tool', 'Side effect', 'State', 'Attempts', 'Reason / result', 'Idempotency key'], rows(d.effects.map((x) =>
        '<tr data-key="' + esc(x.key) + '"><td>' + esc(x.tool) + '</td><td>' + (x.sideEffect ? 'yes' : 'read') + '</td><td>' + pill(x.state) + '</td><td class="num">' + x.attempts + '</td><td class="wrap">' + esc(x.reason ?? x.result ?? '') +
        '</td><td><code class="key">' + esc(x.key) + '</code></td></tr>'), 6, 'no tool calls'));
    showProblems(d.problems);
    status('updated ' + new Date().toISOString().slice(11, 19) + ' UTC · refreshes every 2 s');
  } catch (err) {
    $('#detail').innerHTML = '<p class="muted">' + esc(err.message) + '</p>';
    status('cannot load: ' + err.message);
  }
}
function taskPage(agent, id) {
  $('#main').innerHTML = '<p><a href="#/">← overview</a></p><h2>Task</h2><p><button id="cancel" class="danger">cancel task (ops token)</button></p><div id="detail">loading…</div>';
  $('#cancel').addEventListener('click', async () => {
    const out = await act('api/tasks/' + encodeURIComponent(agent) + '/' + encodeURIComponent(id) + '/cancel');
    if (out) flash('task ' + out.id + ' is ' + out.state);
    refreshTask(agent, id);
  });
  return () => refreshTask(agent, id);
}

// ── dead letters ────────────────────────────────────────────────────────────
async function refreshDeadLetters() {
  try {
    status('reading dead-letter topics…');
    const d = await getJson('api/dead-letters');
    $('#dlq').innerHTML = d.topics.map((t) =>
      '<section data-dlq="' + esc(t.agent) + '"><h3>' + esc(t.agent) + ' <code class="muted">' + esc(t.topic) + '</code> ' +
      (t.exists ? '<button data-replay="' + esc(t.agent) + '">replay waiting records (ops token)</button>' : '<span class="muted">no dead letter yet (topic not created)</span>') + '</h3>' +
      (t.exists ? table('dlq-' + esc(t.agent), ['Partition@offset', 'Reason', 'Error', 'Attempts', 'From', 'Failed at', 'Replayed'], rows(t.records.map((r) =>
        '<tr data-offset="' + esc(r.partition + '@' + r.offset) + '"><td>p' + r.partition + '@' + esc(r.offset) + '</td><td>' + esc(r.errorCode ?? '') + '</td><td>' + esc(r.error ?? '') + '</td><td class="num">' + num(r.attempts) +
        '</td><td><code>' + esc(r.source ?? '') + '</code></td><td>' + time(r.failedAt) + '</td><td>' + (r.replayed ? '<span class="pill ok">replayed</span>' : '<span class="pill mid">waiting</span>') + '</td></tr>'), 7, 'empty')) : '') +
      '</section>').join('') || '<p class="muted">no agents</p>';
    status('read ' + new Date().toISOString().slice(11, 19) + ' UTC');
  } catch (err) {
    status('cannot load: ' + err.message);
  }
}
function deadLettersPage() {
  $('#main').innerHTML = '<h2>Dead letters</h2><p><button id="dlqRefresh">refresh</button> <span class="muted">each agent\\'s command dead-letter topic, read from the start; replay sends back what no replay sent before</span></p><div id="dlq">loading…</div>';
  $('#dlqRefresh').addEventListener('click', refreshDeadLetters);
  $('#dlq').addEventListener('click', async (e) => {
    const b = e.target.closest('button[data-replay]');
    if (!b) return;
    const out = await act('api/dead-letters/' + encodeURIComponent(b.dataset.replay) + '/replay');
    if (out) flash('replayed ' + out.replayed + ' record(s) from ' + out.topic);
    refreshDeadLetters();
  });
  refreshDeadLetters();
  return undefined;
}

// ── workers ─────────────────────────────────────────────────────────────────
async function refreshWorkers() {
  try {
    const d = await getJson('api/workers');
    $('#workers').innerHTML = '<h3>Worker processes</h3>' + table('worker-processes', ['Worker', 'Host', 'Kafka principal', 'Agents', 'Last heartbeat'], rows(d.workers.map((w) =>
      '<tr data-worker="' + esc(w.workerId) + '"><td><code>' + esc(w.workerId) + '</code></td><td>' + (w.host ? esc(w.host) : '<span class="muted">not reported</span>') + '</td><td>' + (w.principal ? '<code>' + esc(w.principal) + '</code>' : '<span class="muted">not reported</span>') + '</td><td>' + esc(w.agents.join(', ')) + '</td><td>' + time(w.lastHeartbeatAt) + '</td></tr>'), 5, 'no worker sent a heartbeat lately')) +
      d.agents.map((a) =>
      '<section data-workers="' + esc(a.agentId) + '"><h3>' + esc(a.agentId) + ' <span class="muted">group ' + esc(a.groupId) + ' · ' + esc(a.state) + ' · lag ' + a.lag +
      ' · in flight ' + num(a.turnsInFlight) + ' · last heartbeat ' + time(a.lastHeartbeatAt) + '</span>' + (a.lagWithoutConsumer ? ' <span class="pill bad">lag with no consumer</span>' : '') + '</h3>' +
      table('members-' + esc(a.agentId), ['Member', 'Client', 'Host', 'Partitions'], rows(a.members.map((m) =>
        '<tr><td><code>' + esc(m.memberId) + '</code></td><td>' + esc(m.clientId) + '</td><td>' + esc(m.host) + '</td><td>' + esc(m.partitions.join(', ') || '–') + '</td></tr>'), 4, 'no members')) +
      '<h3>Partitions</h3>' + table('partitions-' + esc(a.agentId), ['Partition', 'Read by', 'Committed', 'Lag'], rows(a.partitions.map((p) =>
        '<tr><td class="num">' + p.partition + '</td><td>' + (p.memberId ? '<code>' + esc(p.memberId) + '</code>' : '<span class="muted">unassigned</span>') + '</td><td class="num">' + num(p.committed) + '</td><td class="num">' + p.lag + '</td></tr>'), 4, 'no partitions')) +
      '</section>').join('') + (d.missing.length ? '<p class="muted">no command topic yet: ' + d.missing.map(esc).join(', ') + '</p>' : '');
    showProblems(d.problems);
    status('updated ' + new Date().toISOString().slice(11, 19) + ' UTC · refreshes every 3 s');
  } catch (err) {
    status('cannot load: ' + err.message);
  }
}

// ── routing ─────────────────────────────────────────────────────────────────
function route() {
  clearInterval(timer);
  flash('');
  showProblems([]);
  const parts = location.hash.replace(/^#\\/?/, '').split('/').map(decodeURIComponent);
  const page = parts[0] || 'overview';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('on', a.dataset.page === page);
  let poll, every = 2000;
  if (page === 'task' && parts.length === 3) poll = taskPage(parts[1], parts[2]);
  else if (page === 'dead-letters') poll = deadLettersPage();
  else if (page === 'workers') {
    $('#main').innerHTML = '<h2>Workers</h2><div id="workers">loading…</div>';
    poll = refreshWorkers;
    every = 3000;
  } else {
    overviewSkeleton();
    poll = refreshOverview;
  }
  if (poll) {
    poll();
    timer = setInterval(poll, every);
  }
}
window.addEventListener('hashchange', route);
route();
`;

/** The whole document. */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent mesh — operator console</title>
<link rel="icon" href="data:,">
<style>${CONSOLE_STYLE}</style>
</head>
<body>
<header><h1>Agent mesh — operator console</h1>
<nav><a href="#/" data-page="overview">Overview</a><a href="#/workers" data-page="workers">Workers</a><a href="#/dead-letters" data-page="dead-letters">Dead letters</a></nav>
<input id="opsToken" type="password" size="18" placeholder="ops token (actions)" autocomplete="off">
<span id="status">loading…</span></header>
<div id="flash" class="box hidden"></div>
<div id="problems" class="box hidden"></div>
<main id="main"></main>
<script>${CONSOLE_SCRIPT}</script>
</body>
</html>
`;
