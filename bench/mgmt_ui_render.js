// bench/mgmt_ui_render.js
//	The management web UI's render time (issue 41: "the UI's pages render in
//	under 1 s" on a database of 1,000 queues and 100 consumer groups): in
//	Debian's headless Chromium driven by puppeteer-core (the package and
//	version test/mgmt_ui/package-lock.json pins, as test 060 uses), logs in
//	through the login form, then loads each page --loads times and reports
//	per page the median and the largest time until its data is shown.
//
//	"Shown" is the page's first update done: the UI's refresh sets the
//	footer's "Updated hh:mm:ss" (#updated) after the page's API calls
//	answered and their rows were drawn (www/app.js refresh), and the page's
//	h1 is there.  Two ways to reach a page, both timed:
//	  load  a fresh load of the page's address (about:blank first; the
//	        login is kept in the tab's sessionStorage): HTML, scripts and
//	        styles, then the data
//	  nav   a click-equivalent in the loaded app (location.hash set from
//	        another page): the data alone, as a user moving between pages
//	Each page is checked to show what it should (a table row naming the
//	queue, stream or group) so that a page that failed is not timed as fast.
//	nav also reports the browser's main-thread task time for it (the median
//	of CDP's TaskDuration: script, style, layout; wall time of those tasks,
//	so a loaded machine stretches it too, less than the whole wait).
//	Reported, never asserted (bench/README.md).
//
//	Run (puppeteer-core from the pinned lock file, in any scratch directory):
//	  cp test/mgmt_ui/package*.json /tmp/ui-node/ && (cd /tmp/ui-node && npm ci)
//	  NODE_PATH=/tmp/ui-node/node_modules node bench/mgmt_ui_render.js \
//	      --url http://127.0.0.1:15672/ --user app --password secret [--loads 10] \
//	      [--queue bench.q0500] [--stream bench.s1] [--group bench.g1_1] [--poll SECONDS]
//	--poll SECONDS: instead of timing, keep one page (the queues page) open
//	with the UI's refresh every SECONDS until stdin closes or SIGTERM (bench
//	mgmt_api.py --ui-page uses it: a browser polling during AMQP runs).
//	CHROMIUM: the browser (default /usr/bin/chromium).
'use strict';

const puppeteer = require('puppeteer-core');

function arg(name, dflt) {
	const i = process.argv.indexOf('--' + name);
	return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

const url = arg('url', 'http://127.0.0.1:15672/');
const user = arg('user', 'guest');
const password = arg('password', '');
const loads = Number(arg('loads', '10'));
const queue = arg('queue', 'bench.q0500');
const stream = arg('stream', 'bench.s1');
const group = arg('group', 'bench.g1_1');
const poll = arg('poll', null);
const enc = encodeURIComponent;
const queueLike = new RegExp(queue.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\d+$/, '\\d+'));

// page name, its hash, its h1 text, and a text its main area must show once loaded
const PAGES = [
	['overview', '#/', 'Overview', /Queues\s+\d/],
	// (a page of 100 rows: one of the --queue's kind, bench.q0001 say)
	['queues', '#/queues', 'Queues and streams', queueLike],
	['queue', '#/queues/%2F/' + enc(queue), 'Queue ' + queue, 'Messages'],
	['stream', '#/streams/%2F/' + enc(stream), 'Stream ' + stream, group],
	['exchanges', '#/exchanges', 'Exchanges', 'amq.topic'],
	['exchange', '#/exchanges/%2F/amq.direct', 'Exchange amq.direct', 'amq.direct'],
	['groups', '#/groups', 'Consumer groups', group],
	['group', '#/groups/%2F/' + enc(group), 'Consumer group ' + group, 'Partitions'],
	['dead-letters', '#/dead-letters', 'Dead letters', 'Dead-letter queues'],
	['connections', '#/connections', 'Connections', 'Connections'],
];

function median(xs) {
	const s = xs.slice().sort((a, b) => a - b);
	const n = s.length;
	return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// wait until the page is shown: its h1, its expected text, and an update
// done after `since` (the #updated text differs from `before`)
async function shown(page, h1, what, before) {
	await page.waitForFunction((h, w, isRe, b) => {
		const m = document.querySelector('main');
		const t = document.querySelector('main h1');
		const u = document.getElementById('updated');

		if (!m || !t || !t.textContent.includes(h) || !u || !u.textContent || u.textContent === b)
			return false;
		return isRe ? new RegExp(w).test(m.innerText) : m.innerText.includes(w);
	}, { timeout: 60000, polling: 'raf' }, h1, what instanceof RegExp ? what.source : what,
	what instanceof RegExp, before);
}

async function login(page) {
	await page.goto(url, { waitUntil: 'load' });
	await page.waitForSelector('form.login input[autocomplete=username]');
	await page.type('input[autocomplete=username]', user);
	await page.type('input[autocomplete=current-password]', password);
	await page.keyboard.press('Enter');
	await shown(page, 'Overview', /Queues\s+\d/, '');
}

async function main() {
	const browser = await puppeteer.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
			'--disable-extensions', '--disable-background-networking', '--disable-sync',
			'--window-size=1366,768'],
		defaultViewport: { width: 1366, height: 768 },
		protocolTimeout: 120000
	});

	try {
		const page = await browser.newPage();
		const errors = [];

		page.on('pageerror', (e) => errors.push(e.message));
		page.on('requestfinished', (r) => {
			const res = r.response();

			if (res && res.status() >= 400)
				errors.push(res.status() + ' ' + r.url());
		});
		await login(page);
		if (poll !== null) {
			// the UI's own refresh timer, on the queues page (1,000 rows)
			await page.evaluate((s) => {
				const sel = document.getElementById('refresh');
				if (!Array.from(sel.options).some((o) => o.value === s))
					sel.add(new Option(s + ' s', s));
				sel.value = s;
				sel.dispatchEvent(new Event('change'));
			}, String(poll));
			await page.evaluate(() => { location.hash = '#/queues'; });
			await shown(page, 'Queues and streams', queueLike, '');
			console.log('# polling: the queues page open, refresh every ' + poll + ' s');
			await new Promise((resolve) => {
				process.on('SIGTERM', resolve);
				process.stdin.on('end', resolve);
				process.stdin.resume();
			});
			return;
		}
		console.log('# mgmt_ui_render: ' + url + ', ' + loads + ' loads a page; Chromium ' +
			(await browser.version()));
		console.log('');
		console.log('| page | load: median ms | load: max ms | nav: median ms | nav: max ms | nav: main-thread tasks ms | median < 1 s |');
		console.log('|---|---|---|---|---|---|---|');
		for (const [name, hash, h1, what] of PAGES) {
			const tl = [];
			const tn = [];
			const tc = [];

			for (let i = 0; i < loads; i++) {
				let t0;

				// a fresh load of the page's address
				await page.goto('about:blank');
				t0 = Date.now();
				await page.goto(url + hash, { waitUntil: 'domcontentloaded' });
				await shown(page, h1, what, '');
				tl.push(Date.now() - t0);

				// from the exchanges page (or overview), by the hash, as the nav links do
				const from = name === 'exchanges' ? ['#/', 'Overview', /Queues\s+\d/] :
					['#/exchanges', 'Exchanges', 'amq.topic'];
				await page.evaluate((hh) => { location.hash = hh; }, from[0]);
				await shown(page, from[1], from[2], '');
				// #updated shows seconds: make the next update's text differ
				await page.$eval('#updated', (u) => { u.textContent = 'x'; });
				const m0 = await page.metrics();
				t0 = Date.now();
				await page.evaluate((hh) => { location.hash = hh; }, hash);
				await shown(page, h1, what, 'x');
				tn.push(Date.now() - t0);
				tc.push(((await page.metrics()).TaskDuration - m0.TaskDuration) * 1000);
			}
			const ml = median(tl);
			const mn = median(tn);

			console.log('| ' + name + ' `' + hash + '` | ' + ml.toFixed(0) + ' | ' + Math.max(...tl) +
				' | ' + mn.toFixed(0) + ' | ' + Math.max(...tn) + ' | ' + median(tc).toFixed(0) + ' | ' +
				(Math.max(ml, mn) < 1000 ? 'yes' : 'NO') + ' |');
		}
		if (errors.length)
			console.log('# errors during the run: ' + errors.slice(0, 10).join('; '));
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.error('mgmt_ui_render: ' + (e && e.stack ? e.stack : e));
	process.exit(1);
});
