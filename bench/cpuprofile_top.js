// Summarise a V8 .cpuprofile (node --cpu-prof): self time by where the code
// lives (a package under node_modules, node's own modules, V8's GC, ...) and
// the top functions by self time, over the whole profile or a time window.
//   node cpuprofile_top.js FILE.cpuprofile [TOP 25] [FROM_S] [TO_S]
// FROM_S / TO_S: seconds from the profile's start (e.g. to leave out start-up).
'use strict';
const fs = require('fs');
const [file, topArg, fromArg, toArg] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const top = parseInt(topArg || '25', 10);
const byId = new Map(p.nodes.map(n => [n.id, n]));
const self = new Map();
let t = p.startTime;
const from = fromArg ? p.startTime + parseFloat(fromArg) * 1e6 : -Infinity;
const to = toArg ? p.startTime + parseFloat(toArg) * 1e6 : Infinity;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  if (t < from || t > to) continue;
  const id = p.samples[i];
  const d = p.timeDeltas[i + 1] !== undefined ? p.timeDeltas[i + 1] : 0;
  self.set(id, (self.get(id) || 0) + d);
}
function where(cf) {
  const u = cf.url || '';
  if (!u) return cf.functionName.startsWith('(') ? cf.functionName : '(native/V8 builtin)';
  const m = u.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
  if (m) return m[1];
  if (u.startsWith('node:')) return 'node:' + u.slice(5).split('/')[0].replace(/^internal$/, 'internal/' + (u.split('/')[1] || ''));
  return u.split('/').pop();
}
const cat = new Map();
const fn = new Map();
let total = 0;
for (const [id, us] of self) {
  const cf = byId.get(id).callFrame;
  total += us;
  const w = where(cf);
  cat.set(w, (cat.get(w) || 0) + us);
  const k = `${cf.functionName || '(anonymous)'} ${w}:${cf.lineNumber + 1}`;
  fn.set(k, (fn.get(k) || 0) + us);
}
const pr = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n)
  .forEach(([k, v]) => console.log(`${(v / 1000).toFixed(1).padStart(9)} ms ${(100 * v / total).toFixed(1).padStart(5)} %  ${k}`));
console.log(`# ${file}: ${(total / 1000).toFixed(1)} ms sampled`);
console.log('# self time by place');
pr(cat, 40);
console.log(`# top ${top} functions by self time`);
pr(fn, top);
