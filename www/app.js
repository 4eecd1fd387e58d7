/*
 * www/app.js
 *	The shell of the management UI: login (HTTP basic credentials kept in
 *	sessionStorage and sent as Authorization on every request, as
 *	RabbitMQ's management UI does), requests to the API, the hash router
 *	(#/queues/%2F/orders), the virtual host choice and the refresh timer.
 */
'use strict';

(function () {
	var KEY = 'queue_ext.auth';
	var timer = null;
	var current = null;			/* the page shown: { update, route } */

	/* ---- requests ------------------------------------------------------ */

	QE.auth = function () {
		return sessionStorage.getItem(KEY);
	};

	/*
	 * api(method, path, body): the parsed JSON answer (null for 204), or
	 * an Error with the server's reason.  A 401 logs out.
	 */
	QE.api = function (method, path, body, auth) {
		var headers = { Authorization: 'Basic ' + (auth || QE.auth() || '') };
		/*
		 * credentials 'omit': the Authorization header is ours; a 401 with
		 * WWW-Authenticate must not open the browser's own login prompt
		 * (which a fetch with credentials does), the login form says it
		 */
		var init = { method: method, headers: headers, cache: 'no-store', credentials: 'omit' };

		if (body !== undefined) {
			headers['Content-Type'] = 'application/json';
			init.body = JSON.stringify(body);
		}
		return fetch('api/' + path, init).then(function (res) {
			return res.text().then(function (text) {
				var data = null, err;

				if (text) {
					try {
						data = JSON.parse(text);
					} catch (e) {
						data = text;
					}
				}
				if (res.ok)
					return data;
				err = new Error((data && (data.reason || data.error)) || (res.status + ' ' + res.statusText));
				err.status = res.status;
				err.error = data && data.error;
				/*
				 * RabbitMQ's API answers 401 both to a login it refuses and
				 * to a missing privilege: only the first ends the session
				 */
				err.denied = res.status === 401 && !!(data && data.reason && data.reason !== 'Login failed');
				if (res.status === 401 && !auth && !err.denied) {
					sessionStorage.removeItem(KEY);
					showLogin('Your session has ended: log in again.');
				}
				throw err;
			});
		});
	};

	/*
	 * the same, but an endpoint the server has not (404/405/501) gives
	 * null, and one the login may not read { denied: reason }
	 */
	QE.apiOptional = function (path) {
		return QE.api('GET', path).catch(function (e) {
			if (e.status === 404 || e.status === 405 || e.status === 501)
				return null;
			if (e.denied)
				return { denied: e.message };
			throw e;
		});
	};

	/* the chosen virtual host as a path suffix ("" or "/%2F") */
	QE.vhostPath = function () {
		var v = document.getElementById('vhost').value;

		return v ? '/' + QE.enc(v) : '';
	};

	/* ---- login --------------------------------------------------------- */

	function showLogin(message) {
		stopTimer();
		current = null;
		document.getElementById('top').hidden = true;
		document.getElementById('bottom').hidden = true;
		document.title = 'Log in - queue_ext management';
		var user = QE.field('Username', { name: 'username', autocomplete: 'username', required: true });
		var pass = QE.field('Password', { name: 'password', type: 'password', autocomplete: 'current-password' });
		var msg = QE.h('div', { role: 'alert', id: 'login-error' }, message ? QE.h('p', { class: 'error', text: message }) : null);
		var form = QE.h('form', { class: 'login', 'aria-labelledby': 'login-title' },
						QE.h('h1', { id: 'login-title', text: 'queue_ext management' }),
						QE.h('p', { class: 'note', text: 'Log in with a PostgreSQL role.' }),
						msg, user, pass,
						QE.h('button', { type: 'submit', text: 'Log in' }));

		form.addEventListener('submit', function (ev) {
			var v = QE.formValues(form);
			var token = btoa(unescape(encodeURIComponent(v.username + ':' + v.password)));

			ev.preventDefault();
			QE.api('GET', 'whoami', undefined, token).then(function (who) {
				sessionStorage.setItem(KEY, token);
				QE.user = who;
				start();
			}).catch(function (e) {
				QE.fill(msg, QE.h('p', {
					class: 'error',
					text: e.status === 401 ? 'Login failed: wrong username or password.' : 'Login failed: ' + e.message
				}));
				form.querySelector('input[type=password]').focus();
			});
		});
		QE.fill(document.getElementById('main'), form);
		form.querySelector('input').focus();
	}

	function logout() {
		sessionStorage.removeItem(KEY);
		QE.user = null;
		location.hash = '#/';
		showLogin('You are logged out.');
	}

	/* ---- pages --------------------------------------------------------- */

	/* route "#/queues/%2F/orders" -> ['queues', '/', 'orders'] */
	function route() {
		var h = location.hash.replace(/^#\/?/, '');

		return h === '' ? [] : h.split('/').map(function (s) {
			try {
				return decodeURIComponent(s);
			} catch (e) {
				return s;
			}
		});
	}

	function stopTimer() {
		if (timer)
			clearInterval(timer);
		timer = null;
	}

	function refresh() {
		if (!current || !current.update)
			return Promise.resolve();
		return Promise.resolve(current.update()).then(function () {
			document.getElementById('updated').textContent =
				'Updated ' + new Date().toLocaleTimeString('en-GB');
		}).catch(function (e) {
			if (e.status !== 401 || e.denied)
				QE.say(e.message, true);
		});
	}

	function startTimer() {
		var s = Number(document.getElementById('refresh').value);

		stopTimer();
		if (s > 0)
			timer = setInterval(refresh, s * 1000);
	}

	function show() {
		var r = route();
		var name = r[0] || '';
		var page = QE.pages[name] || QE.pages[''];
		var main = document.getElementById('main');
		var first = current === null;

		if (!QE.auth())
			return showLogin();
		document.getElementById('top').hidden = false;
		document.getElementById('bottom').hidden = false;
		Array.prototype.forEach.call(document.querySelectorAll('#nav a'), function (a) {
			var target = a.getAttribute('href').replace(/^#\/?/, '');

			if (target === name)
				a.setAttribute('aria-current', 'page');
			else
				a.removeAttribute('aria-current');
		});
		QE.fill(main);
		current = page(main, r.slice(1)) || {};
		document.title = (main.querySelector('h1') ? main.querySelector('h1').textContent + ' - ' : '') +
			'queue_ext management';
		refresh();
		startTimer();
		/* a new page: move the focus to it (not on the first load) */
		if (!first)
			main.focus();
	}

	/* after login, or on load with credentials kept in this tab */
	function start() {
		var who = document.getElementById('who');

		current = null;
		return QE.api('GET', 'whoami').then(function (u) {
			QE.user = u;
			who.textContent = 'User: ' + u.name;
			return QE.api('GET', 'vhosts');
		}).then(function (vhosts) {
			var sel = document.getElementById('vhost');
			var keep = sel.value;

			QE.fill(sel, QE.h('option', { value: '', text: 'All' }),
					(vhosts || []).map(function (v) {
						return QE.h('option', { value: v.name, text: v.name, selected: v.name === keep });
					}));
			show();
		}).catch(function (e) {
			if (e.status !== 401)
				showLogin('The server did not answer: ' + e.message);
		});
	}

	window.addEventListener('hashchange', function () {
		if (QE.auth())
			show();
	});
	document.getElementById('logout').addEventListener('click', logout);
	document.getElementById('vhost').addEventListener('change', show);
	document.getElementById('refresh').addEventListener('change', startTimer);
	QE.refresh = refresh;
	QE.go = function (hash) {
		if (location.hash === hash)
			show();
		else
			location.hash = hash;
	};

	if (QE.auth())
		start();
	else
		showLogin();
})();
