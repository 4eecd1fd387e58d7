/*
 * www/ui.js
 *	Building blocks of the management UI's pages: elements (always with
 *	textContent, never HTML from the server), sortable and filterable
 *	tables, labelled form fields, rate charts drawn as inline SVG, number
 *	formats.  Everything hangs off one global, QE.
 */
'use strict';

var QE = window.QE || {};
window.QE = QE;

/*
 * h(tag, attrs, ...children): an element.  attrs: properties and
 * attributes (on* are listeners, "class", aria-* and data-* attributes);
 * children: nodes, strings (as text), arrays of them; null is skipped.
 */
QE.h = function (tag, attrs) {
	var el = document.createElement(tag);
	var k;

	attrs = attrs || {};
	for (k in attrs) {
		var v = attrs[k];

		if (v === null || v === undefined || v === false)
			continue;
		if (k.slice(0, 2) === 'on' && typeof v === 'function')
			el.addEventListener(k.slice(2), v);
		else if (k === 'class')
			el.className = v;
		else if (k === 'text')
			el.textContent = v;
		else if (k.indexOf('-') >= 0 || k === 'for' || k === 'role' || k === 'scope' ||
				 k === 'hidden' || k === 'colspan' || k === 'rowspan')
			el.setAttribute(k, v === true ? '' : String(v));
		else
			el[k] = v;
	}
	QE.append(el, Array.prototype.slice.call(arguments, 2));
	return el;
};

QE.append = function (el, children) {
	if (!Array.isArray(children))
		children = [children];
	children.forEach(function (c) {
		if (c === null || c === undefined || c === false)
			return;
		if (Array.isArray(c))
			QE.append(el, c);
		else if (c instanceof Node)
			el.appendChild(c);
		else
			el.appendChild(document.createTextNode(String(c)));
	});
	return el;
};

/* replace the children of el */
QE.fill = function (el) {
	while (el.firstChild)
		el.removeChild(el.firstChild);
	return QE.append(el, Array.prototype.slice.call(arguments, 1));
};

/* a URL path segment: vhost "/" is %2F, as in RabbitMQ's API */
QE.enc = function (s) {
	return encodeURIComponent(s);
};

/* ---- formats ---------------------------------------------------------- */

QE.fmtNum = function (n) {
	if (n === null || n === undefined || n === '')
		return '';
	if (typeof n !== 'number')
		return String(n);
	return n.toLocaleString('en-US', { maximumFractionDigits: 0 });
};

QE.fmtRate = function (r) {
	if (r === null || r === undefined)
		return '';
	return r.toLocaleString('en-US', { maximumFractionDigits: r < 10 ? 1 : 0 }) + '/s';
};

QE.fmtBytes = function (n) {
	var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;

	if (typeof n !== 'number')
		return '';
	while (n >= 1024 && i < u.length - 1) {
		n /= 1024;
		i++;
	}
	return (i ? n.toFixed(1) : n) + ' ' + u[i];
};

QE.fmtBool = function (b) {
	if (b === true || b === 'true')
		return 'yes';
	if (b === false || b === 'false')
		return 'no';
	return b === null || b === undefined ? '' : String(b);
};

/* arguments {x-max-length: 10} as "x-max-length=10, ..." */
QE.fmtArgs = function (a) {
	if (!a || typeof a !== 'object')
		return '';
	return Object.keys(a).map(function (k) {
		var v = a[k];

		return k + '=' + (typeof v === 'object' ? JSON.stringify(v) : String(v));
	}).join(', ');
};

/* the rate of a message_stats entry, e.g. rate(q.message_stats, 'publish') */
QE.rate = function (stats, name) {
	var d = stats && stats[name + '_details'];

	return d && typeof d.rate === 'number' ? d.rate : 0;
};

/* ---- form fields ---------------------------------------------------- */

QE.uid = 0;
QE.nextId = function (stem) {
	QE.uid += 1;
	return 'f-' + stem + '-' + QE.uid;
};

/*
 * field(label, input attrs): a labelled input; the input gets an id and the
 * label for= it.  attrs.tag: 'input' (default), 'select' (attrs.options:
 * [[value, text], ...]) or 'textarea'.
 */
QE.field = function (label, attrs) {
	var tag = attrs.tag || 'input';
	var id = QE.nextId(attrs.name || 'x');
	var a = Object.assign({}, attrs, { id: id });
	var input, opts = a.options;

	delete a.tag;
	delete a.options;
	if (tag === 'input' && !a.type)
		a.type = 'text';
	input = QE.h(tag, a);
	if (opts)
		opts.forEach(function (o) {
			input.appendChild(QE.h('option', { value: o[0], text: o[1], selected: o[0] === attrs.value }));
		});
	if (a.type === 'checkbox')
		return QE.h('div', { class: 'field check' }, input, QE.h('label', { for: id, text: label }));
	return QE.h('div', { class: 'field' }, QE.h('label', { for: id, text: label }), input);
};

/* the values of a form's named controls (checkboxes as booleans) */
QE.formValues = function (form) {
	var out = {};

	Array.prototype.forEach.call(form.elements, function (el) {
		if (!el.name)
			return;
		if (el.type === 'checkbox')
			out[el.name] = el.checked;
		else if (el.type === 'radio') {
			if (el.checked)
				out[el.name] = el.value;
		} else
			out[el.name] = el.value;
	});
	return out;
};

/*
 * form(title, fields, buttonText, onsubmit): a labelled form; onsubmit
 * gets the values and the form, may return a promise; the button is
 * disabled until it settles; errors are shown in the status area.
 */
QE.form = function (title, fields, buttonText, onsubmit, extra) {
	var btn = QE.h('button', { type: 'submit', text: buttonText, class: (extra && extra.buttonClass) || null });
	var id = QE.nextId('form');
	var f = QE.h('form', { class: 'box', 'aria-labelledby': id },
				 QE.h('h3', { id: id, class: 'visually-inline', text: title }),
				 fields, btn);

	f.addEventListener('submit', function (ev) {
		ev.preventDefault();
		btn.disabled = true;
		Promise.resolve()
			.then(function () { return onsubmit(QE.formValues(f), f); })
			.catch(function (e) { QE.say(e.message || String(e), true); })
			.then(function () { btn.disabled = false; });
	});
	return f;
};

/* ---- the status area ---------------------------------------------------- */

QE.say = function (text, isError) {
	var box = document.getElementById('status');
	var p = QE.h('p', { class: isError ? 'error' : null, text: text });

	/* the newest two only: a pile of them would cover the tables */
	while (box.children.length >= 2)
		box.removeChild(box.firstChild);
	box.appendChild(p);
	setTimeout(function () {
		if (p.parentNode)
			p.parentNode.removeChild(p);
	}, isError ? 9000 : 4000);
};

/* ---- tables ------------------------------------------------------------ */

/*
 * A sortable, filterable table.  spec: { caption, columns: [{ key, label,
 * num, get(row) -> value to sort on, show(row) -> node or text }], empty,
 * sort: [key, 'ascending'|'descending'], filter: true (a search box on the
 * row's name), rowKey(row), pageSize (rows drawn at once, default
 * QE.pageSize) }.  Returns { el, set(rows) }: set redraws the body and
 * keeps the sort, the filter, the page and the focus of the sort buttons.
 * More rows than a page (after the filter) are drawn a page at a time with
 * Previous and Next buttons, as RabbitMQ's UI pages its lists: 1,000 queues
 * drawn at once took the browser seconds (bench/mgmt_ui_render.js).
 *
 * spec.remote(query): the server filters, sorts and pages instead, as
 * RabbitMQ's UI has its API do: query is RabbitMQ's paging parameters
 * (page, page_size, name, use_regex, sort, sort_reverse; a column's sortKey
 * names its field there), and the promise it returns gives the paged
 * answer ({items, filtered_count, total_count, ...}).  The table's load()
 * fetches the page shown; set() is not used.  Only that page's rows cross
 * the network and are parsed (the queues page fetched 740 kB at 1,000).
 */
QE.pageSize = 100;
/* localeCompare's order, without making a collator for each comparison */
QE.collator = new Intl.Collator();
QE.table = function (spec) {
	var state = { sort: spec.sort || null, filter: '', rows: [], page: 0, total: 0, filtered: 0, seq: 0 };
	var pageSize = spec.pageSize || QE.pageSize;
	var table = QE.h('table');
	var thead = QE.h('thead');
	var tbody = QE.h('tbody');
	var headRow = QE.h('tr');
	var count = QE.h('span', { class: 'note' });
	var pageNote = QE.h('span', { class: 'note', 'aria-live': 'polite' });
	var prev = QE.h('button', {
		type: 'button', text: 'Previous page',
		onclick: function () { state.page--; change(); }
	});
	var next = QE.h('button', {
		type: 'button', text: 'Next page',
		onclick: function () { state.page++; change(); }
	});
	var pager = QE.h('div', { class: 'toolbar pager' }, prev, pageNote, next);
	var wrap, filterBox = null;

	/* hideCaption: a heading above says the same; screen readers still get it */
	if (spec.caption)
		table.appendChild(QE.h('caption', { text: spec.caption, class: spec.hideCaption ? 'sr-only' : null }));
	spec.columns.forEach(function (c) {
		var th = QE.h('th', { scope: 'col', class: c.num ? 'num' : null });

		if (c.sortable === false)
			th.textContent = c.label;
		else
			th.appendChild(QE.h('button', {
				type: 'button', class: 'sort', text: c.label,
				'aria-label': 'Sort by ' + c.label,
				onclick: function () {
					var dir = state.sort && state.sort[0] === c.key && state.sort[1] === 'ascending'
						? 'descending' : 'ascending';

					state.sort = [c.key, dir];
					state.page = 0;
					change();
				}
			}));
		th.dataset.key = c.key;
		headRow.appendChild(th);
	});
	thead.appendChild(headRow);
	table.appendChild(thead);
	table.appendChild(tbody);

	if (spec.filter) {
		filterBox = QE.field('Filter ' + (spec.filterWhat || 'by name'), {
			type: 'search', name: 'filter', placeholder: 'text or /regex/',
			oninput: function (ev) {
				state.filter = ev.target.value;
				state.page = 0;
				change();
			}
		});
	}
	wrap = QE.h('div', { class: 'table-wrap' },
				filterBox ? QE.h('div', { class: 'toolbar' }, filterBox, count) : null,
				table, pager);

	function value(c, row) {
		return c.get ? c.get(row) : row[c.key];
	}

	function matches(row) {
		var f = state.filter, text, m;

		if (!f)
			return true;
		text = spec.filterText ? spec.filterText(row) : String(row.name || '');
		m = /^\/(.*)\/$/.exec(f);
		if (m) {
			try {
				return new RegExp(m[1], 'i').test(text);
			} catch (e) {
				return false;
			}
		}
		return text.toLowerCase().indexOf(f.toLowerCase()) >= 0;
	}

	/* the sorted column's aria-sort, at once (before a fetch for it answers) */
	function markSort() {
		Array.prototype.forEach.call(headRow.children, function (th) {
			if (state.sort && th.dataset.key === state.sort[0])
				th.setAttribute('aria-sort', state.sort[1]);
			else
				th.removeAttribute('aria-sort');
		});
	}

	/* a sort, filter or page chosen: drawn again, or fetched first */
	function change() {
		markSort();
		if (!spec.remote)
			draw();
		else
			load().catch(function (e) {
				QE.say(e.message, true);
			});
	}

	/* the page shown, from the server (spec.remote) */
	function load() {
		var seq = ++state.seq;
		var q = { page: state.page + 1, page_size: pageSize };
		var m = /^\/(.*)\/$/.exec(state.filter);
		var col = state.sort && spec.columns.filter(function (c) { return c.key === state.sort[0]; })[0];

		if (state.filter) {
			q.name = m ? m[1] : state.filter;
			if (m)
				q.use_regex = 'true';
		}
		if (col) {
			q.sort = col.sortKey || col.key;
			if (state.sort[1] === 'descending')
				q.sort_reverse = 'true';
		}
		return spec.remote(q).then(function (r) {
			if (seq !== state.seq)
				return;
			state.rows = (r && r.items) || [];
			state.total = (r && r.total_count) || 0;
			state.filtered = (r && r.filtered_count) || 0;
			draw();
		}, function (e) {
			if (seq !== state.seq)
				return;
			/* fewer rows than the page shown needs (some went): the first page */
			if (e.error === 'page_out_of_range' && state.page > 0) {
				state.page = 0;
				return load();
			}
			/* a regular expression the server cannot read matches nothing */
			if (e.status === 400 && state.filter) {
				state.rows = [];
				state.filtered = 0;
				draw();
				return;
			}
			throw e;
		});
	}

	function draw() {
		var rows = spec.remote ? state.rows : state.rows.filter(matches);
		var matching, pages, col;

		if (state.sort && !spec.remote) {
			col = spec.columns.filter(function (c) { return c.key === state.sort[0]; })[0];
			if (col) {
				rows = rows.slice().sort(function (a, b) {
					var x = value(col, a), y = value(col, b), r;

					if (typeof x === 'number' && typeof y === 'number')
						r = x - y;
					else
						r = QE.collator.compare(String(x === undefined || x === null ? '' : x),
											 String(y === undefined || y === null ? '' : y));
					return state.sort[1] === 'ascending' ? r : -r;
				});
			}
		}
		markSort();
		/* a page of them: the page kept across redraws, within the rows there are */
		matching = spec.remote ? state.filtered : rows.length;
		pages = Math.max(1, Math.ceil(matching / pageSize));
		state.page = Math.min(Math.max(state.page, 0), pages - 1);
		pager.hidden = pages <= 1;
		if (pages > 1) {
			if (!spec.remote)
				rows = rows.slice(state.page * pageSize, (state.page + 1) * pageSize);
			pageNote.textContent = 'Rows ' + (state.page * pageSize + 1) + '-' +
				(state.page * pageSize + rows.length) + ' of ' + matching;
			prev.disabled = state.page === 0;
			next.disabled = state.page === pages - 1;
		}
		QE.fill(tbody, rows.length ? rows.map(function (r) {
			return QE.h('tr', null, spec.columns.map(function (c, i) {
				var shown = c.show ? c.show(r) : value(c, r);

				if (!c.show && c.num)
					shown = QE.fmtNum(shown);
				return QE.h(i === 0 && !c.notHeader ? 'th' : 'td',
							{ scope: i === 0 && !c.notHeader ? 'row' : null, class: c.num ? 'num' : null },
							shown);
			}));
		}) : QE.h('tr', null, QE.h('td', {
			colspan: spec.columns.length, class: 'empty',
			text: (spec.remote ? state.total : state.rows.length) ? 'No row matches the filter.' : (spec.empty || 'None.')
		})));
		count.textContent = state.filter
			? matching + ' of ' + (spec.remote ? state.total : state.rows.length) + ' shown'
			: (spec.remote ? state.total : state.rows.length) + ' in all';
	}

	draw();
	return {
		el: wrap,
		set: function (rows) {
			state.rows = rows || [];
			draw();
		},
		load: load
	};
};

/* a definition list of label -> value pairs */
QE.props = function (pairs) {
	return QE.h('dl', { class: 'props' }, pairs.map(function (p) {
		return [QE.h('dt', { text: p[0] }), QE.h('dd', null, p[1] === undefined || p[1] === null ? '' : p[1])];
	}));
};

/* ---- charts ------------------------------------------------------------ */

QE.palette = ['#0b5cad', '#c05400', '#1a7f37', '#8250df', '#a4161a'];

/*
 * A history of sampled values, e.g. rates polled every few seconds:
 * history.add({publish: 1.2, ...}) keeps the last `size` samples.
 */
QE.history = {};
QE.sampler = function (key, size) {
	var h = QE.history[key];

	if (!h) {
		h = QE.history[key] = { points: [], size: size || 60 };
	}
	return {
		add: function (values) {
			h.points.push({ t: Date.now(), v: values });
			while (h.points.length > h.size)
				h.points.shift();
		},
		points: function () { return h.points; }
	};
};

/*
 * chart(title, series, points, unit): an inline SVG line chart of the
 * sampled values (series: [[key, label], ...]), with its latest values in
 * the accessible name and a legend.
 */
QE.chart = function (title, series, points, fmt) {
	var W = 420, H = 110, L = 44, B = 16, T = 6, R = 6;
	var NS = 'http://www.w3.org/2000/svg';
	var max = 0, svg, latest = points.length ? points[points.length - 1].v : {};
	var t0, t1, label;

	fmt = fmt || QE.fmtRate;
	points.forEach(function (p) {
		series.forEach(function (s) {
			if (typeof p.v[s[0]] === 'number' && p.v[s[0]] > max)
				max = p.v[s[0]];
		});
	});
	if (max === 0)
		max = 1;
	else
		max = niceCeil(max);
	label = title + ': ' + series.map(function (s) {
		return s[1] + ' ' + fmt(latest[s[0]] || 0);
	}).join(', ');

	function el(tag, attrs) {
		var e = document.createElementNS(NS, tag), k;

		for (k in attrs)
			e.setAttribute(k, attrs[k]);
		return e;
	}

	function niceCeil(v) {
		var p = Math.pow(10, Math.floor(Math.log10(v))), m = v / p;

		return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
	}

	svg = el('svg', { viewBox: '0 0 ' + W + ' ' + H, width: '100%', role: 'img', class: 'chart', 'aria-label': label });
	svg.appendChild(el('title', {})).textContent = label;
	[0, 0.5, 1].forEach(function (f) {
		var y = T + (H - T - B) * (1 - f);
		var tx;

		svg.appendChild(el('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: '#d0d7de', 'stroke-width': 1 }));
		tx = svg.appendChild(el('text', { x: L - 4, y: y + 4, 'text-anchor': 'end' }));
		tx.textContent = Number((max * f).toPrecision(3)).toLocaleString('en-US');
	});
	if (points.length > 1) {
		t0 = points[0].t;
		t1 = points[points.length - 1].t;
		series.forEach(function (s, i) {
			var d = points.map(function (p) {
				var x = L + (W - L - R) * (t1 === t0 ? 1 : (p.t - t0) / (t1 - t0));
				var y = T + (H - T - B) * (1 - (p.v[s[0]] || 0) / max);

				return x.toFixed(1) + ',' + y.toFixed(1);
			}).join(' ');

			svg.appendChild(el('polyline', { points: d, fill: 'none', stroke: QE.palette[i % QE.palette.length], 'stroke-width': 2 }));
		});
		svg.appendChild(el('text', { x: L, y: H - 3 })).textContent =
			Math.round((t1 - t0) / 1000) + ' s ago';
		svg.appendChild(el('text', { x: W - R, y: H - 3, 'text-anchor': 'end' })).textContent = 'now';
	} else {
		svg.appendChild(el('text', { x: L + 8, y: H / 2 })).textContent = 'collecting samples...';
	}
	return QE.h('figure', { class: 'panel', style: 'margin:0' },
				QE.h('figcaption', null, QE.h('h2', { text: title })),
				svg,
				QE.h('ul', { class: 'legend' }, series.map(function (s, i) {
					return QE.h('li', { style: '--c:' + QE.palette[i % QE.palette.length] },
								s[1] + ': ' + fmt(latest[s[0]] || 0));
				})));
};
