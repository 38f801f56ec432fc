/** The console page: one self-contained HTML document (no external scripts, styles or fonts). */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent mesh — operator console</title>
<link rel="icon" href="data:,">
<style>
  :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f5f6f8; }
  body { margin: 0 auto; max-width: 1200px; padding: 16px 24px; }
  header { display: flex; align-items: baseline; gap: 16px; }
  h1 { font-size: 20px; margin: 0 0 8px; }
  h2 { font-size: 15px; margin: 20px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: #4a5468; }
  #status { color: #6b7385; font-size: 13px; }
  table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid #dfe3ea; font-size: 13px; }
  th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #eef0f4; }
  th { background: #fafbfc; font-weight: 600; color: #4a5468; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .pill { padding: 1px 8px; border-radius: 10px; font-size: 12px; }
  .ok { background: #dcf5e3; color: #17663a; } .bad { background: #fde2e1; color: #9b1c1c; } .mid { background: #fff1cc; color: #7a5300; }
  .muted { color: #8a92a3; }
  #problems { background: #fff1cc; border: 1px solid #f0d68a; padding: 8px 12px; font-size: 13px; display: none; }
  code { font-size: 12px; }
</style>
</head>
<body>
<header><h1>Agent mesh — operator console</h1><span id="status">loading…</span></header>
<div id="problems"></div>
<h2>Agents</h2>
<table id="agents"><thead><tr><th>Agent</th><th>Health</th><th class="num">Lag</th><th class="num">In flight</th><th class="num">Dead letters</th></tr></thead><tbody></tbody></table>
<h2>Recent tasks</h2>
<table id="tasks"><thead><tr><th>Task</th><th>Agent</th><th>State</th><th>Updated</th><th>Message</th></tr></thead><tbody></tbody></table>
<h2>Unknown tool outcomes</h2>
<table id="unknowns"><thead><tr><th>Idempotency key</th><th>Tool</th><th>Task</th><th>Reason</th></tr></thead><tbody></tbody></table>
<script>
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const num = (n) => (n === null || n === undefined ? '<span class="muted">–</span>' : esc(n));
const stateClass = (s) => (s === 'completed' ? 'ok' : s === 'failed' || s === 'rejected' || s === 'canceled' ? 'bad' : 'mid');
function fill(id, rows, empty) {
  document.querySelector('#' + id + ' tbody').innerHTML = rows.length ? rows.join('') : '<tr><td colspan="5" class="muted">' + empty + '</td></tr>';
}
async function refresh() {
  try {
    const res = await fetch('api/overview', { cache: 'no-store' });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    const o = await res.json();
    fill('agents', o.agents.map((a) => '<tr data-agent="' + esc(a.id) + '"><td><b>' + esc(a.id) + '</b> <span class="muted">' + esc(a.name) + '</span></td><td>' +
      (a.retired ? '<span class="pill bad">retired</span>' : a.healthy ? '<span class="pill ok">healthy</span>' : '<span class="pill mid">no heartbeat</span>') +
      '</td><td class="num">' + num(a.lag) + '</td><td class="num">' + num(a.inFlight) + '</td><td class="num">' + num(a.deadLetters) + '</td></tr>'), 'no agents');
    fill('tasks', o.tasks.map((t) => '<tr data-task="' + esc(t.id) + '"><td><code>' + esc(t.id) + '</code></td><td>' + esc(t.agent) + '</td><td><span class="pill ' + stateClass(t.state) + '">' + esc(t.state) +
      '</span></td><td>' + esc(t.updated.replace('T', ' ').slice(0, 19)) + '</td><td>' + esc(t.message) + '</td></tr>'), 'no tasks');
    fill('unknowns', o.unknowns.map((u) => '<tr><td><code>' + esc(u.key) + '</code></td><td>' + esc(u.tool) + '</td><td><code>' + esc(u.taskId) + '</code></td><td>' + esc(u.reason) + '</td></tr>'), 'none open');
    const p = document.getElementById('problems');
    p.style.display = o.problems.length ? 'block' : 'none';
    p.innerHTML = o.problems.map(esc).join('<br>');
    document.getElementById('status').textContent = 'updated ' + o.at.slice(11, 19) + ' UTC · refreshes every 2 s';
  } catch (err) {
    document.getElementById('status').textContent = 'cannot load: ' + err.message;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
`;
