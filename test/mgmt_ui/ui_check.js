// test/mgmt_ui/ui_check.js
//	The management web UI (www/) in a real headless Chromium (Debian's, driven
//	by puppeteer-core), against a running management server: logs in (a wrong
//	password first), opens every page, declares a queue, publishes and gets a
//	message, binds, purges, checks the text the tables show, the keyboard
//	focus and the labels, and saves a 1366x768 screenshot of each page.
//	Prints "ok NAME" or "not ok NAME: why" per check (test/t/060_mgmt_ui.pl
//	reads them).
//
//	Environment:
//	  QE_UI_URL        the server's root, e.g. http://127.0.0.1:15672/
//	  QE_UI_USER, QE_UI_PASSWORD   a login that may do everything
//	  QE_UI_SHOTS      the directory for the screenshots
//	  QE_UI_AMQP_PORT  the AMQP port of the same broker: a client connected
//	                   there must show on the connections page
//	  QE_UI_STREAM, QE_UI_GROUP, QE_UI_DLQ   a stream, a consumer group on
//	                   it and a dead-letter queue made beforehand (empty: the
//	                   server has no queue_ext pages, e.g. RabbitMQ)
//	  CHROMIUM         the browser (default /usr/bin/chromium)
'use strict';

const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');
const { launch } = require('./browser');
const amqp = require('amqplib');

const url = process.env.QE_UI_URL;
const user = process.env.QE_UI_USER;
const password = process.env.QE_UI_PASSWORD || '';
const shots = process.env.QE_UI_SHOTS;
const amqpPort = process.env.QE_UI_AMQP_PORT;
const stream = process.env.QE_UI_STREAM || '';
const group = process.env.QE_UI_GROUP || '';
const dlq = process.env.QE_UI_DLQ || '';
const queue = 'ui_check_q';
const payload = 'hello from chromium ' + process.pid;
const seen = new Set();

function report(name, ok, why) {
	if (seen.has(name))
		throw new Error('check ' + name + ' reported twice');
	seen.add(name);
	console.log(ok ? 'ok ' + name : 'not ok ' + name + ': ' + String(why).replace(/\n/g, ' | '));
}

// run one named check: fn throws (or rejects) to fail it
async function check(name, fn) {
	try {
		await fn();
		report(name, true);
	} catch (e) {
		report(name, false, e && e.message ? e.message : e);
	}
}

function assert(cond, why) {
	if (!cond)
		throw new Error(why);
}

async function shot(page, name) {
	await page.screenshot({ path: path.join(shots, name + '.png') });
}

// the text of the main area
async function mainText(page) {
	return page.$eval('main', (m) => m.innerText);
}

// wait until the main area shows text (a string or regex), or fail saying what it shows
async function waitText(page, what, timeout) {
	try {
		await page.waitForFunction((w, isRe) => {
			const t = document.querySelector('main').innerText;
			return isRe ? new RegExp(w).test(t) : t.includes(w);
		}, { timeout: timeout || 15000, polling: 100 }, what instanceof RegExp ? what.source : what, what instanceof RegExp);
	} catch (e) {
		throw new Error('the page does not show "' + what + '"; it shows: ' + (await mainText(page)).slice(0, 600));
	}
}

// the rows of the table with this caption, as arrays of cell texts
async function tableRows(page, caption) {
	return page.evaluate((c) => {
		const t = Array.from(document.querySelectorAll('main table')).find((x) => x.caption && x.caption.textContent === c);
		if (!t)
			return null;
		return Array.from(t.tBodies[0].rows).map((r) => Array.from(r.cells).map((td) => td.innerText.trim()));
	}, caption);
}

// poll cond() (every 200 ms, up to 20 s) until it gives a true value,
// which is returned; else fail with why()
async function waitFor(cond, why) {
	const deadline = Date.now() + 20000;

	for (;;) {
		const v = await cond();
		if (v)
			return v;
		if (Date.now() > deadline)
			throw new Error(why());
		await new Promise((r) => setTimeout(r, 200));
	}
}

async function waitRow(page, caption, pred, what) {
	const deadline = Date.now() + 20000;
	let rows;

	for (;;) {
		rows = await tableRows(page, caption);
		if (rows && rows.some(pred))
			return rows.find(pred);
		if (Date.now() > deadline)
			throw new Error('table "' + caption + '" has no row ' + what + ': ' + JSON.stringify(rows));
		await new Promise((r) => setTimeout(r, 200));
	}
}

// click the link to href in the main area; found and clicked in one step
// in the page, as a refresh may redraw the table it is in at any moment
async function clickLink(page, href) {
	await page.waitForFunction((x) => {
		const a = Array.from(document.querySelectorAll('main a')).find((l) => l.getAttribute('href') === x);
		if (!a)
			return false;
		a.click();
		return true;
	}, { timeout: 20000, polling: 100 }, href);
}

// go to a page by its hash and wait for its h1
async function open(page, hash, h1) {
	await page.evaluate((h) => { location.hash = h; }, hash);
	await waitText(page, h1);
	await page.waitForFunction((t) => {
		const h = document.querySelector('main h1');
		return h && h.textContent.includes(t);
	}, { timeout: 15000 }, h1);
}

// controls of the page with no label: inputs, selects, textareas, buttons
async function unlabelled(page) {
	return page.evaluate(() => Array.from(document.querySelectorAll('input, select, textarea, button'))
		.filter((el) => el.offsetParent !== null)
		.filter((el) => !((el.labels && el.labels.length) || el.getAttribute('aria-label') ||
			(el.tagName === 'BUTTON' && el.textContent.trim())))
		.map((el) => el.outerHTML.slice(0, 80)));
}

// tables whose header cells are not th scope=col
async function badTables(page) {
	return page.evaluate(() => Array.from(document.querySelectorAll('main table'))
		.filter((t) => !t.tHead || Array.from(t.tHead.rows[0].cells).some((c) => c.tagName !== 'TH' || c.getAttribute('scope') !== 'col') || !t.caption)
		.map((t) => (t.caption ? t.caption.textContent : t.outerHTML.slice(0, 60))));
}

// fill the form whose heading is title: fields { label: value }, then submit
async function submitForm(page, title, fields) {
	const ok = await page.evaluate((t, f) => {
		const form = Array.from(document.querySelectorAll('form')).find((x) => {
			const h = x.querySelector('h3');
			return h && h.textContent === t;
		});
		if (!form)
			return 'no form ' + t;
		for (const [label, value] of Object.entries(f)) {
			const l = Array.from(form.querySelectorAll('label')).find((x) => x.textContent === label);
			if (!l)
				return 'no field ' + label + ' in ' + t;
			const el = document.getElementById(l.htmlFor);
			if (el.type === 'checkbox' || el.type === 'radio')
				el.checked = !!value;
			else
				el.value = value;
		}
		form.querySelector('button[type=submit]').click();
		return null;
	}, title, fields);
	assert(ok === null, ok);
}

async function statusSays(page, what) {
	try {
		await page.waitForFunction((w) => document.getElementById('status').innerText.includes(w),
			{ timeout: 15000, polling: 100 }, what);
	} catch (e) {
		throw new Error('no status "' + what + '"; status: ' + await page.$eval('#status', (s) => s.innerText));
	}
}

async function main() {
	fs.mkdirSync(shots, { recursive: true });
	const browser = await launch(puppeteer);
	let conn = null;

	try {
		const page = await browser.newPage();
		const consoleErrors = [];
		const failedRequests = [];

		page.on('pageerror', (e) => consoleErrors.push(e.message));
		page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
		page.on('requestfinished', (r) => {
			const res = r.response();
			// a 404 of an optional endpoint is expected only where the server has no queue_ext pages
			if (res && res.status() >= 500)
				failedRequests.push(res.status() + ' ' + r.url());
		});
		page.on('dialog', (d) => d.accept());
		page.setDefaultTimeout(20000);

		// ---- login --------------------------------------------------------
		await check('login_form', async () => {
			await page.goto(url, { waitUntil: 'load' });
			await page.waitForSelector('form.login input[autocomplete=username]');
			const focused = await page.evaluate(() => document.activeElement.getAttribute('autocomplete'));
			assert(focused === 'username', 'the username field does not have the focus: ' + focused);
			const nav = await page.$eval('#top', (e) => getComputedStyle(e).display);
			assert(nav === 'none', 'the navigation shows before login (display ' + nav + ')');
			assert((await unlabelled(page)).length === 0, 'unlabelled: ' + (await unlabelled(page)).join(' '));
			await shot(page, '01-login');
		});
		await check('login_refused', async () => {
			await page.type('input[autocomplete=username]', user);
			await page.type('input[autocomplete=current-password]', password + 'x-wrong');
			await page.keyboard.press('Enter');
			await waitText(page, 'Login failed');
			assert(await page.$('form.login'), 'the login form went away after a wrong password');
			assert(await page.evaluate(() => sessionStorage.length === 0), 'credentials kept after a refused login');
			await shot(page, '02-login-refused');
		});
		await check('login', async () => {
			await page.$eval('input[autocomplete=current-password]', (el) => { el.value = ''; });
			await page.type('input[autocomplete=current-password]', password);
			await page.keyboard.press('Enter');
			await page.waitForSelector('main h1');
			await waitText(page, 'Overview');
			const who = await page.$eval('#who', (e) => e.innerText);
			assert(who.includes(user), 'the header does not name the user: ' + who);
		});

		// ---- overview -------------------------------------------------------
		await check('overview', async () => {
			await waitText(page, 'Queues');
			// a second sample draws the lines of the charts
			await page.waitForFunction(() => document.querySelectorAll('main svg.chart polyline').length >= 5,
				{ timeout: 30000 });
			const cards = await page.$$eval('.cards .card', (cs) => cs.map((c) => c.innerText));
			assert(cards.some((c) => /Queues\s+\d/.test(c)), 'no queue count: ' + cards.join('; '));
			const aria = await page.$$eval('main svg.chart', (s) => s.map((x) => x.getAttribute('aria-label')));
			assert(aria.length === 2 && aria[0].startsWith('Message rates: Publish'), 'charts: ' + aria.join('; '));
			const t = await mainText(page);
			assert(t.includes('Replication'), 'no replication section');
			if (stream)		// queue_ext: the replication state is shown
				assert(/Role\s+primary/.test(t) && /Quorum/.test(t), 'no replication role: ' + t.slice(0, 400));
			await shot(page, '03-overview');
		});

		// ---- keyboard ---------------------------------------------------------
		await check('keyboard_focus', async () => {
			// a fresh load of the page (the login is kept in this tab)
			await page.reload({ waitUntil: 'load' });
			await waitText(page, 'Overview');
			await page.keyboard.press('Tab');
			let f = await page.evaluate(() => document.activeElement.className + ' ' + document.activeElement.textContent);
			assert(f.includes('skip'), 'the first Tab does not reach the skip link: ' + f);
			// the focus is visible: an outline is drawn
			const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
			assert(outline !== 'none', 'no visible focus on the skip link');
			await page.keyboard.press('Tab');
			f = await page.evaluate(() => document.activeElement.textContent);
			assert(f === 'Overview', 'the second Tab does not reach the first page link: ' + f);
			// walk the navigation with Tab and open "Queues and streams" with Enter
			await page.keyboard.press('Tab');
			f = await page.evaluate(() => document.activeElement.textContent);
			assert(f === 'Queues and streams', 'Tab order: ' + f);
			const ring = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
			assert(ring !== 'none', 'no visible focus on a navigation link');
			await page.keyboard.press('Enter');
			await page.waitForFunction(() => location.hash === '#/queues');
			await page.waitForFunction(() => document.activeElement && document.activeElement.id === 'main');
			const cur = await page.$eval('#nav a[aria-current=page]', (a) => a.textContent);
			assert(cur === 'Queues and streams', 'aria-current is on ' + cur);
			await shot(page, '04-keyboard-focus');
		});

		// ---- queues: declare, list, filter, sort -------------------------------
		await check('declare_queue', async () => {
			await open(page, '#/queues', 'Queues and streams');
			await submitForm(page, 'Add a queue', { Name: queue });
			await statusSays(page, 'Queue ' + queue + ' added.');
			await waitRow(page, 'Queues', (r) => r[0] === queue, queue);
		});
		// the queues table asks the server for each page, filter and sort
		// (RabbitMQ's paging): what it shows comes once that answered
		await check('queues_filter_sort', async () => {
			const all = (await tableRows(page, 'Queues')).length;
			const filter = await page.$('main input[type=search]');
			await filter.type(queue);
			let rows;
			await waitFor(async () => {
				rows = await tableRows(page, 'Queues');
				return rows.length === 1 && rows[0][0] === queue;
			}, () => 'filtered rows: ' + JSON.stringify(rows));
			const note = await page.$eval('main .toolbar .note', (n) => n.innerText);
			assert(note === '1 of ' + all + ' shown', 'count: ' + note);
			await filter.click({ clickCount: 3 });
			await page.keyboard.press('Backspace');
			await waitFor(async () => (await tableRows(page, 'Queues')).length === all,
						  () => 'the filter cleared does not show the ' + all + ' rows again');
			// sorting by Name with the keyboard: focus the button, Enter twice
			await page.focus('main th button[aria-label="Sort by Name"]');
			await page.keyboard.press('Enter');
			const sortDir = await page.$eval('main table th[data-key=name]', (th) => th.getAttribute('aria-sort'));
			assert(sortDir === 'descending', 'aria-sort after Enter: ' + sortDir);
			let names;
			await waitFor(async () => {
				names = (await tableRows(page, 'Queues')).map((r) => r[0]);
				const sorted = names.slice().sort((a, b) => b.localeCompare(a));
				return names.length === all && JSON.stringify(names) === JSON.stringify(sorted);
			}, () => 'not sorted descending: ' + names.join(','));
			await page.keyboard.press('Enter');
		});
		await check('queues_page', async () => {
			// (RabbitMQ counts a new queue's messages some seconds later)
			const row = await waitRow(page, 'Queues', (r) => r[0] === queue && r[4] === '0', queue + ' with 0 ready');
			assert(row[1] === '/' && row[6] === '0', 'row of ' + queue + ': ' + JSON.stringify(row));
			if (stream)
				await waitRow(page, 'Streams', (r) => r[0] === stream, stream);
			assert((await unlabelled(page)).length === 0, 'unlabelled: ' + (await unlabelled(page)).join(' '));
			assert((await badTables(page)).length === 0, 'tables without caption or th scope=col: ' + (await badTables(page)).join(', '));
			await shot(page, '05-queues');
		});

		// ---- one queue: publish, get, bind, consumers, purge ---------------------
		await check('queue_publish', async () => {
			await clickLink(page, '#/queues/%2F/' + queue);
			await waitText(page, 'Queue ' + queue);
			await submitForm(page, 'Publish to ' + queue, { Payload: payload });
			await statusSays(page, 'Message published.');
			// the details show it once the server counted it
			await page.waitForFunction(() => /Ready\s+1\b/.test(document.querySelector('main').innerText), { timeout: 30000 });
		});
		await check('queue_get', async () => {
			await submitForm(page, 'Get from ' + queue, { 'Ack mode': 'ack_requeue_false', Messages: '1' });
			await statusSays(page, '1 message got.');
			const row = await waitRow(page, 'Messages got', (r) => r[5] && r[5].includes(payload), payload);
			assert(row[1] === queue, 'routing key shown: ' + row[1]);
			await page.waitForFunction(() => /Ready\s+0\b/.test(document.querySelector('main').innerText), { timeout: 30000 });
		});
		await check('queue_bind', async () => {
			await submitForm(page, 'Add a binding to ' + queue, { 'From exchange': 'amq.direct', 'Routing key': 'ui-key' });
			await statusSays(page, 'Binding added.');
			await waitRow(page, 'Bindings', (r) => r[0] === 'amq.direct' && r[1] === 'ui-key', 'amq.direct ui-key');
		});
		await check('queue_consumers', async () => {
			if (!amqpPort)
				throw new Error('QE_UI_AMQP_PORT is not set');
			conn = await amqp.connect({ hostname: '127.0.0.1', port: Number(amqpPort), username: user, password: password, vhost: '/' },
				{ clientProperties: { connection_name: 'ui-check' } });
			conn.on('error', () => {});
			const ch = await conn.createChannel();
			ch.on('error', () => {});
			await ch.prefetch(7);
			await ch.consume(queue, () => {}, { consumerTag: 'ui-consumer' });
			await page.evaluate(() => QE.refresh());
			await waitRow(page, 'Consumers', (r) => r[0] === 'ui-consumer' && r[3] === '7', 'ui-consumer with prefetch 7');
			await shot(page, '06-queue');
		});
		await check('queue_purge', async () => {
			await submitForm(page, 'Publish to ' + queue, { Payload: 'to be purged' });
			await statusSays(page, 'Message published.');
			// the consumer took it: cancel it first so the message waits
			await conn.close();
			conn = null;
			await submitForm(page, 'Publish to ' + queue, { Payload: 'to be purged' });
			await page.waitForFunction(() => /Ready\s+[1-9]/.test(document.querySelector('main').innerText), { timeout: 30000 });
			const purge = (await page.$$('main button.danger'))[0];
			await purge.click();
			await statusSays(page, 'Queue ' + queue + ' purged.');
			await page.waitForFunction(() => /Ready\s+0\b/.test(document.querySelector('main').innerText), { timeout: 30000 });
		});

		// ---- exchanges ---------------------------------------------------------
		await check('exchanges_page', async () => {
			await open(page, '#/exchanges', 'Exchanges');
			await waitRow(page, 'Exchanges', (r) => r[0] === 'amq.topic' && r[2] === 'topic', 'amq.topic');
			await waitRow(page, 'Exchanges', (r) => r[0] === '(AMQP default)' && r[2] === 'direct', 'the default exchange');
			await submitForm(page, 'Add an exchange', { Name: 'ui_check_x', Type: 'fanout' });
			await statusSays(page, 'Exchange ui_check_x added.');
			await waitRow(page, 'Exchanges', (r) => r[0] === 'ui_check_x' && r[2] === 'fanout', 'ui_check_x fanout');
			assert((await unlabelled(page)).length === 0, 'unlabelled: ' + (await unlabelled(page)).join(' '));
			await shot(page, '07-exchanges');
		});
		await check('exchange_page', async () => {
			await clickLink(page, '#/exchanges/%2F/amq.direct');
			await waitText(page, 'Exchange amq.direct');
			await waitRow(page, 'Bindings from this exchange', (r) => r[0] === queue && r[2] === 'ui-key', queue + ' ui-key');
			await submitForm(page, 'Publish to amq.direct', { 'Routing key': 'ui-key', Payload: 'via amq.direct' });
			await statusSays(page, 'Message published.');
			await shot(page, '08-exchange');
		});

		// ---- queue_ext: streams, groups, dead letters -------------------------------
		await check('stream_page', async () => {
			if (!stream)
				return;
			await open(page, '#/streams/%2F/' + encodeURIComponent(stream), 'Stream ' + stream);
			const rows = await waitRow(page, 'Partitions', (r) => r[0] === '0', 'partition 0');
			assert(Number(rows[2].replace(/,/g, '')) > 0, 'partition 0 has no messages: ' + rows.join(' '));
			await waitRow(page, 'Consumer groups reading ' + stream, (r) => r[0] === group, group);
			await shot(page, '09-stream');
		});
		await check('groups_page', async () => {
			await open(page, '#/groups', 'Consumer groups');
			if (!stream) {
				await waitText(page, 'not available');
				await shot(page, '10-groups');
				return;
			}
			const row = await waitRow(page, 'Consumer groups', (r) => r[0] === group, group);
			assert(row[2] === stream, 'stream of ' + group + ': ' + row[2]);
			assert(Number(row[6].replace(/,/g, '')) > 0, 'the group shows no lag: ' + row.join(' | '));
			assert(/p0: 6\b/.test(row[8]) && /p1: 2\b/.test(row[8]), 'lag per partition: ' + row[8]);
			await shot(page, '10-groups');
		});
		await check('group_seek', async () => {
			if (!stream)
				return;
			await clickLink(page, '#/groups/%2F/' + encodeURIComponent(group));
			await waitText(page, 'Consumer group ' + group);
			const before = await waitRow(page, 'Partitions', (r) => r[0] === '0', 'partition 0');
			const lag = Number(before[3].replace(/,/g, ''));
			assert(lag > 0, 'partition 0 has no lag: ' + before.join(' '));
			// seek partition 0 to its end: its lag becomes 0
			const next = await page.evaluate(async (s) => {
				const r = await QE.api('GET', 'queue-ext/streams/%2F');
				return r.find((x) => x.name === s).partitions_detail.find((p) => p.partition === 0).next_offset;
			}, stream);
			await submitForm(page, 'Seek ' + group, { Partition: '0', offset: true, Offset: String(next) });
			await statusSays(page, 'Group ' + group + ' moved.');
			await waitRow(page, 'Partitions', (r) => r[0] === '0' && r[3] === '0', 'partition 0 with lag 0');
			assert((await unlabelled(page)).length === 0, 'unlabelled: ' + (await unlabelled(page)).join(' '));
			await shot(page, '11-group');
		});
		await check('dead_letters_page', async () => {
			await open(page, '#/dead-letters', 'Dead letters');
			if (!dlq) {
				await waitText(page, 'not available');
				await shot(page, '12-dead-letters');
				return;
			}
			const row = await waitRow(page, 'Dead-letter queues', (r) => r[0] === dlq, dlq);
			const n = Number(row[2].replace(/,/g, ''));
			assert(n > 0, 'no message in ' + dlq + ': ' + row.join(' | '));
			assert((await unlabelled(page)).length === 0, 'unlabelled: ' + (await unlabelled(page)).join(' '));
			await shot(page, '12-dead-letters');
			await submitForm(page, 'Redrive ' + dlq, { 'How many (empty: all)': '1' });
			await statusSays(page, '1 message(s) moved from ' + dlq + '.');
			await waitRow(page, 'Dead-letter queues', (r) => r[0] === dlq && Number(r[2].replace(/,/g, '')) === n - 1, dlq + ' with ' + (n - 1));
		});

		// ---- connections ---------------------------------------------------------
		await check('connections_page', async () => {
			conn = await amqp.connect({ hostname: '127.0.0.1', port: Number(amqpPort), username: user, password: password, vhost: '/' });
			conn.on('error', () => {});
			const ch = await conn.createChannel();
			ch.on('error', () => {});
			await ch.prefetch(3);
			await open(page, '#/connections', 'Connections');
			await page.evaluate(() => QE.refresh());
			const row = await waitRow(page, 'Connections', (r) => r[1] === user && /amqplib|AMQP|node/i.test(r.join(' ')), 'of amqplib as ' + user);
			assert(row[2] === '/', 'vhost of the connection: ' + row[2]);
			await waitRow(page, 'Channels', (r) => r[1] === user && r[5] === '3', 'with prefetch 3');
			await shot(page, '13-connections');
		});

		// ---- what went wrong on the way ----------------------------------------------
		await check('no_script_errors', async () => {
			const errs = consoleErrors.filter((e) => !/status of 40[145]/.test(e));
			assert(errs.length === 0, errs.join(' || '));
			assert(failedRequests.length === 0, 'server errors: ' + failedRequests.join(', '));
		});
		await check('logout', async () => {
			await page.click('#logout');
			await page.waitForSelector('form.login');
			assert(await page.evaluate(() => sessionStorage.length === 0), 'credentials kept after logout');
			await page.reload({ waitUntil: 'load' });
			await page.waitForSelector('form.login');
		});
	} finally {
		if (conn)
			await conn.close().catch(() => {});
		await browser.close();
	}
}

main().then(() => process.exit(0), (e) => {
	console.log('not ok script: ' + (e && e.stack ? e.stack : e).toString().replace(/\n/g, ' | '));
	process.exit(1);
});
