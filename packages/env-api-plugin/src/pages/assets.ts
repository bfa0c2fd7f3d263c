import { createHash } from 'node:crypto'

/**
 * The stylesheet and the one small script of the pages, served by the
 * plugin at `{basePath}/assets/envkeep.css` and `/assets/envkeep.js`
 * (the CSP allows only 'self': no inline style or script anywhere).
 */
export const STYLESHEET = `
:root {
  --fg: #1d2330; --muted: #5d6678; --bg: #f6f7f9; --card: #fff; --line: #dde1e8;
  --accent: #2456c9; --accent-fg: #fff; --danger: #b3261e; --ok: #1f7a3a; --warn: #8a5a00;
  --radius: 8px; --top: #1d2330; --field: #fff; --field-line: #b8bfcc; --soft: #eef1f6; --code: #f1f3f7;
  --ok-bg: #e5f5ea; --ok-line: #a9d9b7; --warn-bg: #fff4e0; --warn-line: #f0d29a; --bad-bg: #fdecea; --bad-line: #f2b8b5;
  --info-bg: #e7efff; --info-line: #b9cdf7;
  color-scheme: light dark;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6e9ef; --muted: #a3abbb; --bg: #12151c; --card: #1b2029; --line: #343b48;
    --accent: #8fb0ff; --accent-fg: #0d1320; --danger: #ff9b93; --ok: #7fd69a; --warn: #f1c26b;
    --top: #0b0d12; --field: #12151c; --field-line: #4a5263; --soft: #262c38; --code: #12151c;
    --ok-bg: #15301f; --ok-line: #2d6b41; --warn-bg: #33270f; --warn-line: #6e5320; --bad-bg: #3a1714; --bad-line: #7a302a;
    --info-bg: #1a2744; --info-line: #34508f;
  }
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: .5rem; top: -3rem; background: var(--card); color: var(--accent); padding: .5rem .75rem; border-radius: 6px; z-index: 10; }
.skip:focus { top: .5rem; }
body { margin: 0; line-height: 1.5; font-size: 16px; }
header.top { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .75rem 1rem; background: var(--top); color: #fff; }
header.top a { color: #fff; text-decoration: none; }
header.top .brand { display: inline-flex; align-items: center; gap: .4rem; }
header.top .brand img { width: 1.25rem; height: 1.25rem; }
header.top a.sign-out { text-decoration: underline; }
header.top .brand { font-weight: 700; letter-spacing: .02em; margin-right: auto; }
header.top nav { display: flex; gap: 1rem; }
header.top .who { opacity: .8; font-size: .9rem; }
header.top a.waiting { font-size: .85rem; font-weight: 600; padding: .05rem .6rem; border-radius: 999px; border: 1px solid var(--warn-line); background: var(--warn-bg); color: var(--warn); }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin: 1.75rem 0 .5rem; }
h3 { font-size: 1.05rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
a { color: var(--accent); }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.small { font-size: .85rem; }
.hint { color: var(--muted); font-size: .92rem; }
.crumbs { margin: 0; font-size: .92rem; }
.toc { display: flex; flex-wrap: wrap; gap: .25rem 1rem; font-size: .92rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 1rem; margin: 1rem 0; }
.card > h2:first-child, .card > h3:first-child { margin-top: 0; }
.vh { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.badge, .role, .mark, .status { display: inline-block; font-size: .78rem; font-weight: 600; padding: .05rem .5rem; border-radius: 999px; border: 1px solid var(--line); background: var(--soft); vertical-align: middle; }
.badge { background: var(--warn-bg); border-color: var(--warn-line); color: var(--warn); }
.role-owner { background: var(--info-bg); border-color: var(--info-line); }
.mark-new { background: var(--ok-bg); border-color: var(--ok-line); color: var(--ok); }
.mark-added { background: var(--ok-bg); border-color: var(--ok-line); color: var(--ok); }
.mark-deleted { background: var(--danger-bg, var(--warn-bg)); color: var(--danger); }
.mark-changed, .mark-overwrite { background: var(--warn-bg); border-color: var(--warn-line); color: var(--warn); }
.status-applied, .status-active { color: var(--ok); }
.status-rejected, .status-revoked, .status-expired, .status-ended { color: var(--danger); }
.delivery-delivered { color: var(--ok); font-weight: 600; } .delivery-failed { color: var(--danger); font-weight: 600; } .delivery-pending { color: var(--warn); font-weight: 600; }
ul.vaults, ul.vars { list-style: none; padding: 0; margin: 0; }
ul.vaults li { display: flex; flex-wrap: wrap; gap: .25rem .75rem; align-items: center; padding: .75rem 1rem; background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); margin-bottom: .5rem; }
ul.vaults li a { font-weight: 600; overflow-wrap: anywhere; }
li.var { border-top: 1px solid var(--line); padding: .6rem 0; }
li.var:first-child { border-top: 0; }
.var-head, .var-value, .var-actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.var-value { margin: .25rem 0; }
code.value { display: block; width: 100%; white-space: pre-wrap; background: var(--code); border: 1px solid var(--line); border-radius: 4px; padding: .35rem .5rem; }
.hidden-value { letter-spacing: .15em; color: var(--muted); }
form { margin: .25rem 0; }
form.inline { display: inline-block; margin: 0; }
form label { display: block; font-weight: 600; margin: .6rem 0 .2rem; }
form label.check { display: flex; gap: .5rem; align-items: center; font-weight: 400; }
form.filters { display: flex; flex-wrap: wrap; gap: .25rem .75rem; align-items: end; }
form.filters label { margin: 0; }
input, select, textarea { font: inherit; padding: .45rem .55rem; border: 1px solid var(--field-line); border-radius: 6px; background: var(--field); color: inherit; max-width: 100%; }
input:not([type=checkbox]), textarea { width: 100%; }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
button { font: inherit; font-weight: 600; cursor: pointer; padding: .45rem .9rem; min-height: 2.5rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg); margin-top: .5rem; }
button.secondary { background: var(--card); color: var(--accent); }
mark { background: var(--warn-bg); color: inherit; border-bottom: 2px solid var(--warn-line); }
form.reject { display: flex; flex-direction: column; gap: .25rem; }
form.reject textarea { min-width: 16rem; }
.danger-zone { border-color: var(--danger); }
nav.tabs { display: flex; flex-wrap: wrap; gap: .25rem; border-bottom: 1px solid var(--line); margin: 1rem 0; }
nav.tabs a { padding: .5rem .75rem; border: 1px solid transparent; border-bottom: 0; border-radius: 6px 6px 0 0; text-decoration: none; }
nav.tabs a.current { border-color: var(--line); background: var(--card); font-weight: 600; margin-bottom: -1px; }
nav.envs { display: flex; flex-wrap: wrap; gap: .5rem; margin: .5rem 0 1rem; }
nav.envs a { padding: .25rem .6rem; border: 1px solid var(--line); border-radius: 999px; text-decoration: none; }
nav.envs a.current { background: var(--soft); font-weight: 600; }
a.button { display: inline-block; font-weight: 600; padding: .45rem .9rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--card); color: var(--accent); text-decoration: none; }
button.danger { background: var(--card); color: var(--danger); border-color: var(--danger); }
button.primary { min-width: 7rem; }
button:disabled { opacity: .45; cursor: not-allowed; }
form.inline button, .var-actions button { margin-top: 0; }
details > summary { cursor: pointer; color: var(--accent); font-weight: 600; }
details.add { margin-top: .75rem; }
.buttons { display: flex; flex-wrap: wrap; gap: .75rem; }
.decide .buttons button { min-height: 3rem; }
table { border-collapse: collapse; width: 100%; background: var(--card); }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .85rem; color: var(--muted); }
td.actions { white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.notice { background: var(--ok-bg); border: 1px solid var(--ok-line); border-radius: var(--radius); padding: .6rem 1rem; }
.refusal { background: var(--bad-bg); border: 1px solid var(--bad-line); border-radius: var(--radius); padding: .75rem 1rem; margin-bottom: 1rem; }
.refusal h2 { margin: 0 0 .25rem; font-size: 1.1rem; color: var(--danger); }
.outcome { border-radius: var(--radius); padding: .75rem 1rem; margin-bottom: 1rem; border: 1px solid var(--line); background: var(--card); }
.outcome h2 { margin: 0; }
.outcome-applied { border-color: var(--ok-line); background: var(--ok-bg); }
.outcome-rejected, .outcome-expired { border-color: var(--bad-line); background: var(--bad-bg); }
.error-page .status { font-weight: 700; color: var(--danger); margin: 0; }
dl.failure { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .5rem 0; }
dl.failure dt { font-weight: 600; }
dl.failure dd { margin: 0; overflow-wrap: anywhere; }
details.failure-details { margin: .75rem 0 .5rem; }
.error-page .advice { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: .6rem 1rem; }
details.failure-details pre, details.plain pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--card); border: 1px solid var(--line); padding: .5rem; border-radius: 4px; }
button.copy { display: none; }
.js button.copy { display: inline-block; }
@media (max-width: 40rem) {
  main { padding: .75rem; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack tr { border: 1px solid var(--line); border-radius: var(--radius); margin-bottom: .5rem; padding: .25rem 0; background: var(--card); }
  table.stack td { border: 0; padding: .2rem .75rem; }
  table.stack td[data-label]::before { content: attr(data-label); display: block; font-size: .78rem; color: var(--muted); }
  td.actions { white-space: normal; }
  .decide .buttons form, .decide .buttons button { width: 100%; }
}
`

/**
 * Progressive enhancement only: every page works without it.
 * - "Copy details" copies the plain-text failure record.
 * - forms with data-confirm ask before submitting.
 * - <time datetime> elements are shown in the person's time zone.
 * - revealed values on the vault page get "Copy" and "Hide"; hidden ones "Copy" (a logged reveal).
 */
export const SCRIPT = `'use strict';
(function () {
  document.documentElement.classList.add('js');
  function copyText(text, button) {
    function done(ok) {
      var label = button.textContent;
      button.textContent = ok ? 'Copied' : 'Copy failed';
      setTimeout(function () { button.textContent = label; }, 1500);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallback(text)); });
    } else {
      done(fallback(text));
    }
  }
  function fallback(text) {
    var area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.className = 'vh';
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }
  document.addEventListener('click', function (event) {
    var button = event.target && event.target.closest ? event.target.closest('button[data-copy]') : null;
    if (!button) return;
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (source) copyText(source.textContent, button);
  });
  // "Copy" of a hidden value: the Reveal form is sent in the background (the same logged read),
  // the value taken from the answer and copied; it is never put in this page.
  document.addEventListener('click', function (event) {
    var button = event.target && event.target.closest ? event.target.closest('button[data-reveal-copy]') : null;
    if (!button || !button.form) return;
    var name = button.getAttribute('data-reveal-copy');
    var form = button.form;
    fetch(form.getAttribute('action'), { method: 'POST', credentials: 'same-origin', body: new URLSearchParams(new FormData(form)) })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(new Error('status ' + r.status)); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, 'text/html');
        var found = null;
        var codes = doc.querySelectorAll('code.value[data-name]');
        for (var c = 0; c < codes.length; c++) if (codes[c].getAttribute('data-name') === name) found = codes[c];
        if (!found) throw new Error('no value');
        copyText(found.textContent, button);
      })
      .catch(function () {
        var label = button.textContent;
        button.textContent = 'Copy failed';
        setTimeout(function () { button.textContent = label; }, 1500);
      });
  });
  // A revealed value on the vault page gets "Copy" and "Hide" (the value is already in the page:
  // nothing is fetched, so the Reveal that put it there stays the one logged read).
  var values = document.querySelectorAll('.var-value > code.value');
  for (var v = 0; v < values.length; v++) {
    var code = values[v];
    code.id = code.id || 'value-' + v;
    var copy = document.createElement('button');
    copy.type = 'button'; copy.className = 'copy secondary'; copy.textContent = 'Copy';
    copy.setAttribute('data-copy', code.id);
    copy.setAttribute('aria-label', 'Copy the value of ' + code.getAttribute('data-name'));
    var hide = document.createElement('button');
    hide.type = 'button'; hide.className = 'secondary'; hide.textContent = 'Hide';
    hide.setAttribute('data-hide', code.id);
    hide.setAttribute('aria-label', 'Hide the value of ' + code.getAttribute('data-name'));
    code.parentNode.appendChild(copy);
    code.parentNode.appendChild(hide);
  }
  document.addEventListener('click', function (event) {
    var button = event.target && event.target.closest ? event.target.closest('button[data-hide]') : null;
    if (!button) return;
    var target = document.getElementById(button.getAttribute('data-hide'));
    if (!target) return;
    var hidden = target.hidden = !target.hidden;
    button.textContent = hidden ? 'Show' : 'Hide';
    button.setAttribute('aria-label', (hidden ? 'Show' : 'Hide') + ' the value of ' + target.getAttribute('data-name'));
  });
  // <time datetime> shows UTC in the page; with JavaScript, the person's own time zone.
  var times = document.querySelectorAll('time[datetime]');
  for (var i = 0; i < times.length; i++) {
    var d = new Date(times[i].getAttribute('datetime'));
    if (isNaN(d.getTime())) continue;
    try {
      times[i].textContent = d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
      times[i].title = times[i].getAttribute('datetime');
    } catch (e) { /* keep the UTC text */ }
  }
  document.addEventListener('submit', function (event) {
    var form = event.target;
    var question = form && form.getAttribute ? form.getAttribute('data-confirm') : null;
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
`

/** The favicon (also the brand mark in the top bar): a key on the accent colour. */
export const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2456c9"/><circle cx="12" cy="16" r="5.5" fill="none" stroke="#fff" stroke-width="3"/><path d="M17 16h10M23 16v4M27 16v3" stroke="#fff" stroke-width="3" stroke-linecap="round"/></svg>
`

function etag(s: string): string {
  return `"${createHash('sha256').update(s).digest('base64url').slice(0, 16)}"`
}

export const ASSETS: Readonly<Record<string, { body: string; type: string; etag: string }>> = Object.freeze({
  'envkeep.css': { body: STYLESHEET, type: 'text/css; charset=utf-8', etag: etag(STYLESHEET) },
  'envkeep.js': { body: SCRIPT, type: 'text/javascript; charset=utf-8', etag: etag(SCRIPT) },
  'favicon.svg': { body: FAVICON, type: 'image/svg+xml', etag: etag(FAVICON) },
})
