/*
 * www/pages.js
 *	The pages of the management UI, one function each: page(main, args)
 *	draws the page's fixed parts (headings, forms) into main and returns
 *	{ update }, which app.js calls at once and then on every refresh; it
 *	fetches the page's data and redraws only tables, charts and figures,
 *	so a form being filled in keeps its text and its focus.  The paths
 *	and field names are RabbitMQ's management API (/api/...) and
 *	queue_ext's own (/api/queue-ext/...), as docs/management.md lists.
 */
'use strict';

(function () {
	var h = QE.h, enc = QE.enc;

	QE.pages = {};

	/* ---- shared pieces -------------------------------------------------- */

	function vhostDefault() {
		return document.getElementById('vhost').value || '/';
	}

	function vhostField() {
		var opts = Array.prototype.filter.call(document.getElementById('vhost').options, function (o) {
			return o.value !== '';
		}).map(function (o) { return [o.value, o.value]; });

		if (!opts.length)
			opts = [['/', '/']];
		return QE.field('Virtual host', { tag: 'select', name: 'vhost', options: opts, value: vhostDefault() });
	}

	function queueHref(vhost, name) {
		return '#/queues/' + enc(vhost) + '/' + enc(name);
	}

	function exchangeHref(vhost, name) {
		return '#/exchanges/' + enc(vhost) + '/' + enc(name || 'amq.default');
	}

	function link(href, text) {
		return h('a', { href: href, text: text });
	}

	/* "{"x-max-length": 10}" or "" -> object; a clear error otherwise */
	function parseArgs(text, what) {
		var v;

		if (!text || !text.trim())
			return {};
		try {
			v = JSON.parse(text);
		} catch (e) {
			throw new Error(what + ' must be a JSON object, e.g. {"x-max-length": 1000}');
		}
		if (!v || typeof v !== 'object' || Array.isArray(v))
			throw new Error(what + ' must be a JSON object, e.g. {"x-max-length": 1000}');
		return v;
	}

	function section(title, body) {
		var id = QE.nextId('sec');

		return h('section', { 'aria-labelledby': id }, h('h2', { id: id, text: title }), body);
	}

	/* a placeholder filled by update(): shows "unavailable" for null data */
	function slot() {
		return h('div');
	}

	function unavailable(what, data) {
		if (data && data.denied)
			return h('p', { class: 'note', text: what + ' is not shown to this login: ' + data.denied });
		return h('p', { class: 'note', text: what + ' is not available from this server.' });
	}

	/* data from apiOptional that is no list: null or { denied } */
	function missing(data) {
		return data === null || !Array.isArray(data);
	}

	function confirmThen(question, fn) {
		if (window.confirm(question))
			return fn();
		return null;
	}

	function sum(list, f) {
		return (list || []).reduce(function (a, x) { return a + (Number(f(x)) || 0); }, 0);
	}

	/* ---- overview ------------------------------------------------------- */

	QE.pages[''] = function (main) {
		var cards = h('dl', { class: 'cards', 'aria-label': 'Totals' });
		var charts = h('div', { class: 'grid' });
		var repl = slot();
		var node = slot();
		var rates = QE.sampler('overview.rates');
		var queued = QE.sampler('overview.queued');

		QE.append(main, [
			h('h1', { text: 'Overview' }),
			cards,
			charts,
			h('div', { class: 'cols' },
			  section('Replication', repl),
			  section('Server', node))
		]);

		return {
			update: function () {
				return Promise.all([QE.api('GET', 'overview'), QE.apiOptional('queue-ext/replication')])
					.then(function (r) {
						var ov = r[0] || {}, rp = r[1];
						var ms = ov.message_stats || {}, qt = ov.queue_totals || {}, ot = ov.object_totals || {};

						rates.add({
							publish: QE.rate(ms, 'publish'),
							deliver: QE.rate(ms, 'deliver_get'),
							ack: QE.rate(ms, 'ack')
						});
						queued.add({
							ready: qt.messages_ready || 0,
							unacked: qt.messages_unacknowledged || 0
						});
						QE.fill(cards, [
							['Queues', ot.queues], ['Exchanges', ot.exchanges],
							['Connections', ot.connections], ['Channels', ot.channels],
							['Consumers', ot.consumers], ['Messages', qt.messages],
							['Ready', qt.messages_ready], ['Unacked', qt.messages_unacknowledged]
						].map(function (c) {
							return h('div', { class: 'card' }, h('dt', { text: c[0] }), h('dd', { text: QE.fmtNum(c[1] || 0) }));
						}));
						QE.fill(charts,
								QE.chart('Message rates', [['publish', 'Publish'], ['deliver', 'Deliver / get'], ['ack', 'Ack']], rates.points()),
								QE.chart('Queued messages', [['ready', 'Ready'], ['unacked', 'Unacked']], queued.points(), QE.fmtNum));
						QE.fill(node, QE.props([
							['Product', (ov.product_name || 'queue_ext') + ' ' + (ov.product_version || '')],
							['RabbitMQ API version', ov.rabbitmq_version || ov.management_version],
							['Node', ov.node],
							['Cluster', ov.cluster_name]
						]));
						if (!rp || rp.denied) {
							QE.fill(repl, unavailable('Replication state', rp));
							return;
						}
						QE.fill(repl,
								QE.props([
									['Role', rp.role],
									['synchronous_standby_names', rp.synchronous_standby_names || '(none)'],
									['Quorum', rp.quorum_unavailable
										? h('span', { class: 'tag bad', text: 'unavailable: quorum publishes wait' })
										: h('span', { class: 'tag ok', text: 'available' })]
								]),
								standbysTable(rp.standbys || []));
					});
			}
		};
	};

	function standbysTable(rows) {
		var cols = {};

		rows.forEach(function (r) {
			Object.keys(r).forEach(function (k) {
				if (typeof r[k] !== 'object')
					cols[k] = true;
			});
		});
		cols = Object.keys(cols);
		if (!cols.length)
			cols = ['application_name', 'state', 'sync_state'];
		var t = QE.table({
			caption: 'Standbys',
			empty: 'No standby is connected.',
			columns: cols.map(function (k) {
				return { key: k, label: k, num: rows.length && typeof rows[0][k] === 'number' };
			})
		});

		t.set(rows);
		return t.el;
	}

	/* ---- queues and streams -------------------------------------------- */

	QE.pages.queues = function (main, args) {
		var queues, streams, streamsSlot = slot();

		if (args.length >= 2)
			return queuePage(main, args[0], args.slice(1).join('/'));

		queues = QE.table({
			caption: 'Queues',
			filter: true,
			sort: ['name', 'ascending'],
			empty: 'No queue.',
			/* the server pages, filters and sorts: one page of rows fetched, not every queue */
			remote: function (q) {
				q.columns = 'name,vhost,type,state,messages_ready,messages_unacknowledged,messages,' +
					'consumers,message_stats.publish_details,message_stats.deliver_get_details';
				return QE.api('GET', 'queues' + QE.vhostPath() + '?' + Object.keys(q).map(function (k) {
					return k + '=' + QE.enc(q[k]);
				}).join('&'));
			},
			columns: [
				{ key: 'name', label: 'Name', show: function (q) { return link(queueHref(q.vhost, q.name), q.name); } },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'type', label: 'Type' },
				{ key: 'state', label: 'State' },
				{ key: 'messages_ready', label: 'Ready', num: true },
				{ key: 'messages_unacknowledged', label: 'Unacked', num: true },
				{ key: 'messages', label: 'Total', num: true },
				{ key: 'consumers', label: 'Consumers', num: true },
				{ key: 'in', label: 'Incoming', num: true, sortKey: 'message_stats.publish_details.rate', get: function (q) { return QE.rate(q.message_stats, 'publish'); },
				  show: function (q) { return QE.fmtRate(QE.rate(q.message_stats, 'publish')); } },
				{ key: 'out', label: 'Deliver / get', num: true, sortKey: 'message_stats.deliver_get_details.rate', get: function (q) { return QE.rate(q.message_stats, 'deliver_get'); },
				  show: function (q) { return QE.fmtRate(QE.rate(q.message_stats, 'deliver_get')); } }
			]
		});
		streams = QE.table({
			caption: 'Streams',
			filter: true,
			sort: ['name', 'ascending'],
			empty: 'No stream.',
			columns: [
				{ key: 'name', label: 'Name', show: function (s) { return link('#/streams/' + enc(s.vhost) + '/' + enc(s.name), s.name); } },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'partitions', label: 'Partitions', num: true },
				{ key: 'messages', label: 'Messages', num: true },
				{ key: 'groups', label: 'Groups', num: true },
				{ key: 'lag', label: 'Lag (all groups)', num: true },
				{ key: 'max_lag', label: 'Largest group lag', num: true }
			]
		});

		QE.append(main, [
			h('h1', { text: 'Queues and streams' }),
			QE.form('Add a queue', [
				vhostField(),
				QE.field('Name', { name: 'name', required: true }),
				QE.field('Type', { tag: 'select', name: 'type', options: [['classic', 'classic'], ['quorum', 'quorum'], ['stream', 'stream']] }),
				QE.field('Durable', { type: 'checkbox', name: 'durable', checked: true }),
				QE.field('Arguments (JSON)', { name: 'arguments', placeholder: '{"x-max-length": 1000}', size: 28 })
			], 'Add queue', function (v, form) {
				var a = parseArgs(v.arguments, 'Arguments');

				if (v.type !== 'classic')
					a['x-queue-type'] = v.type;
				return QE.api('PUT', 'queues/' + enc(v.vhost) + '/' + enc(v.name),
							  { durable: v.durable, auto_delete: false, arguments: a })
					.then(function () {
						QE.say('Queue ' + v.name + ' added.');
						form.elements.name.value = '';
						return QE.refresh();
					});
			}),
			queues.el,
			section('Streams', streamsSlot)
		]);
		QE.append(streamsSlot, streams.el);

		return {
			update: function () {
				var vp = QE.vhostPath();

				return Promise.all([queues.load(),
									QE.apiOptional('queue-ext/streams' + vp),
									QE.apiOptional('queue-ext/groups' + vp)])
					.then(function (r) {
						if (missing(r[1])) {
							QE.fill(streamsSlot, unavailable('The list of streams', r[1]));
							return;
						}
						if (!streamsSlot.contains(streams.el))
							QE.fill(streamsSlot, streams.el);
						streams.set(r[1].map(function (s) {
							var gs = (missing(r[2]) ? [] : r[2]).filter(function (g) {
								return g.vhost === s.vhost && g.stream === s.name;
							});

							return Object.assign({}, s, {
								groups: gs.length,
								lag: sum(gs, function (g) { return g.lag; }),
								max_lag: gs.reduce(function (m, g) { return Math.max(m, g.lag || 0); }, 0)
							});
						}));
					});
			}
		};
	};

	function queuePage(main, vhost, name) {
		var base = 'queues/' + enc(vhost) + '/' + enc(name);
		var info = slot(), charts = h('div', { class: 'grid' }), got = slot();
		var rates = QE.sampler('queue.rates.' + vhost + '/' + name);
		var depth = QE.sampler('queue.depth.' + vhost + '/' + name);
		var consumers = QE.table({
			caption: 'Consumers', hideCaption: true,
			empty: 'No consumer.',
			columns: [
				{ key: 'consumer_tag', label: 'Consumer tag' },
				{ key: 'channel', label: 'Channel', get: function (c) { return (c.channel_details || {}).name || ''; } },
				{ key: 'ack_required', label: 'Ack required', get: function (c) { return QE.fmtBool(c.ack_required); } },
				{ key: 'prefetch_count', label: 'Prefetch', num: true },
				{ key: 'active', label: 'Active', get: function (c) { return QE.fmtBool(c.active); } }
			]
		});
		var bindings = QE.table({
			caption: 'Bindings', hideCaption: true,
			empty: 'No binding.',
			columns: [
				{ key: 'source', label: 'From exchange', show: function (b) {
					return link(exchangeHref(b.vhost, b.source), b.source || '(AMQP default)');
				} },
				{ key: 'routing_key', label: 'Routing key' },
				{ key: 'arguments', label: 'Arguments', get: function (b) { return QE.fmtArgs(b.arguments); } },
				{ key: 'unbind', label: 'Action', sortable: false, show: function (b) {
					if (!b.source)
						return '';
					return h('button', {
						type: 'button', class: 'secondary', text: 'Unbind',
						'aria-label': 'Unbind from ' + b.source + ' with key ' + b.routing_key,
						onclick: function () {
							return QE.api('DELETE', 'bindings/' + enc(vhost) + '/e/' + enc(b.source) + '/q/' + enc(name) +
										  '/' + enc(b.properties_key || '~'))
								.then(function () { QE.say('Binding removed.'); return QE.refresh(); })
								.catch(function (e) { QE.say(e.message, true); });
						}
					});
				} }
			]
		});
		var messages = QE.table({
			caption: 'Messages got',
			columns: [
				{ key: 'n', label: '#', num: true },
				{ key: 'routing_key', label: 'Routing key' },
				{ key: 'exchange', label: 'Exchange' },
				{ key: 'redelivered', label: 'Redelivered', get: function (m) { return QE.fmtBool(m.redelivered); } },
				{ key: 'properties', label: 'Properties', get: function (m) { return QE.fmtArgs(m.properties); } },
				{ key: 'payload', label: 'Payload', show: function (m) {
					return h('pre', { class: 'payload', text: m.payload + (m.payload_encoding === 'base64' ? '  (base64)' : '') });
				} }
			]
		});

		QE.append(main, [
			h('p', { class: 'crumbs' }, link('#/queues', 'Queues and streams'), ' / virtual host ', vhost),
			h('h1', null, 'Queue ', h('span', { text: name })),
			h('div', { class: 'cols' }, info, charts),
			h('div', { class: 'cols' },
			  section('Publish a message', QE.form('Publish to ' + name, [
				  QE.field('Payload', { tag: 'textarea', name: 'payload', rows: 2 }),
				  QE.field('Content type', { name: 'content_type', placeholder: 'text/plain', size: 12 }),
				  QE.field('Persistent', { type: 'checkbox', name: 'persistent', checked: true }),
				  QE.field('Headers (JSON)', { name: 'headers', placeholder: '{"k": "v"}', size: 14 })
			  ], 'Publish message', function (v, form) {
				  var props = { delivery_mode: v.persistent ? 2 : 1 };
				  var hd = parseArgs(v.headers, 'Headers');

				  if (v.content_type)
					  props.content_type = v.content_type;
				  if (Object.keys(hd).length)
					  props.headers = hd;
				  return QE.api('POST', 'exchanges/' + enc(vhost) + '/amq.default/publish',
								{ properties: props, routing_key: name, payload: v.payload, payload_encoding: 'string' })
					  .then(function (r) {
						  QE.say(r && r.routed === false ? 'Message published, but not routed.' : 'Message published.');
						  form.elements.payload.value = '';
						  return QE.refresh();
					  });
			  })),
			  section('Get messages', [QE.form('Get from ' + name, [
				  QE.field('Ack mode', { tag: 'select', name: 'ackmode', value: 'ack_requeue_true', options: [
					  ['ack_requeue_true', 'Nack, requeue'],
					  ['ack_requeue_false', 'Ack, remove'],
					  ['reject_requeue_true', 'Reject, requeue'],
					  ['reject_requeue_false', 'Reject, no requeue']] }),
				  QE.field('Messages', { type: 'number', name: 'count', value: '1', min: 1, max: 1000, size: 5 })
			  ], 'Get messages', function (v) {
				  return QE.api('POST', base + '/get',
								{ count: Number(v.count) || 1, ackmode: v.ackmode, encoding: 'auto', truncate: 50000 })
					  .then(function (msgs) {
						  msgs = msgs || [];
						  messages.set(msgs.map(function (m, i) { return Object.assign({ n: i + 1 }, m); }));
						  QE.fill(got, msgs.length ? messages.el : h('p', { class: 'empty', text: 'The queue is empty.' }));
						  QE.say(msgs.length + ' message' + (msgs.length === 1 ? '' : 's') + ' got.');
						  return QE.refresh();
					  });
			  }), got])),
			section('Consumers', consumers.el),
			section('Bindings', [
				bindings.el,
				QE.form('Add a binding to ' + name, [
					QE.field('From exchange', { name: 'source', required: true, size: 18 }),
					QE.field('Routing key', { name: 'routing_key', size: 18 }),
					QE.field('Arguments (JSON)', { name: 'arguments', size: 18 })
				], 'Bind', function (v) {
					return QE.api('POST', 'bindings/' + enc(vhost) + '/e/' + enc(v.source) + '/q/' + enc(name),
								  { routing_key: v.routing_key, arguments: parseArgs(v.arguments, 'Arguments') })
						.then(function () { QE.say('Binding added.'); return QE.refresh(); });
				})
			]),
			section('Purge or delete', h('div', { class: 'toolbar' },
				h('button', { type: 'button', class: 'danger', text: 'Purge messages', onclick: function () {
					confirmThen('Purge every ready message of ' + name + '?', function () {
						return QE.api('DELETE', base + '/contents')
							.then(function () { QE.say('Queue ' + name + ' purged.'); return QE.refresh(); })
							.catch(function (e) { QE.say(e.message, true); });
					});
				} }),
				h('button', { type: 'button', class: 'danger', text: 'Delete queue', onclick: function () {
					confirmThen('Delete queue ' + name + ' and its messages?', function () {
						return QE.api('DELETE', base)
							.then(function () { QE.say('Queue ' + name + ' deleted.'); QE.go('#/queues'); })
							.catch(function (e) { QE.say(e.message, true); });
					});
				} })))
		]);

		return {
			update: function () {
				return Promise.all([QE.api('GET', base), QE.api('GET', base + '/bindings')]).then(function (r) {
					var q = r[0], ms = q.message_stats || {};

					rates.add({ publish: QE.rate(ms, 'publish'), deliver: QE.rate(ms, 'deliver_get'), ack: QE.rate(ms, 'ack') });
					depth.add({ ready: q.messages_ready || 0, unacked: q.messages_unacknowledged || 0 });
					QE.fill(info, section('Details', QE.props([
						['Virtual host', q.vhost],
						['Type', q.type],
						['State', q.state],
						['Durable', QE.fmtBool(q.durable)],
						['Auto-delete', QE.fmtBool(q.auto_delete)],
						['Exclusive', QE.fmtBool(q.exclusive)],
						['Arguments', QE.fmtArgs(q.arguments) || '(none)'],
						['Messages', QE.fmtNum(q.messages || 0)],
						['Ready', QE.fmtNum(q.messages_ready || 0)],
						['Unacked', QE.fmtNum(q.messages_unacknowledged || 0)],
						['Consumers', QE.fmtNum(q.consumers || 0)]
					])));
					QE.fill(charts,
							QE.chart('Message rates', [['publish', 'Publish'], ['deliver', 'Deliver / get'], ['ack', 'Ack']], rates.points()),
							QE.chart('Queued messages', [['ready', 'Ready'], ['unacked', 'Unacked']], depth.points(), QE.fmtNum));
					consumers.set(q.consumer_details || []);
					bindings.set(r[1]);
				}).catch(function (e) {
					if (e.status === 404)
						QE.fill(info, h('p', { class: 'error', role: 'alert', text: 'Queue ' + name + ' in virtual host ' + vhost + ' does not exist.' }));
					else
						throw e;
				});
			}
		};
	}

	/* one stream: its partitions and the groups reading it */
	QE.pages.streams = function (main, args) {
		var vhost = args[0] || '/', name = args.slice(1).join('/');
		var info = slot();
		var parts = QE.table({
			caption: 'Partitions',
			sort: ['partition', 'ascending'],
			columns: [
				{ key: 'partition', label: 'Partition', num: true },
				{ key: 'first_offset', label: 'First offset', num: true },
				{ key: 'next_offset', label: 'Next offset', num: true },
				{ key: 'messages', label: 'Messages', num: true, get: function (p) { return (p.next_offset || 0) - (p.first_offset || 0); } }
			]
		});
		var groups = groupsTable('Consumer groups reading ' + name);

		QE.append(main, [
			h('p', { class: 'crumbs' }, link('#/queues', 'Queues and streams'), ' / virtual host ', vhost),
			h('h1', null, 'Stream ', h('span', { text: name })),
			info, section('Partitions', parts.el), section('Consumer groups', groups.el)
		]);
		return {
			update: function () {
				return Promise.all([QE.apiOptional('queue-ext/streams/' + enc(vhost)),
									QE.apiOptional('queue-ext/groups/' + enc(vhost))]).then(function (r) {
					var s = (missing(r[0]) ? [] : r[0]).filter(function (x) { return x.name === name; })[0];

					if (!s) {
						QE.fill(info, h('p', { class: 'error', role: 'alert', text: 'Stream ' + name + ' in virtual host ' + vhost + ' does not exist.' }));
						return;
					}
					QE.fill(info, QE.props([
						['Virtual host', s.vhost], ['Partitions', QE.fmtNum(s.partitions)],
						['Messages', QE.fmtNum(s.messages)], ['Arguments', QE.fmtArgs(s.arguments) || '(none)']
					]));
					parts.set(s.partitions_detail || []);
					groups.set((missing(r[1]) ? [] : r[1]).filter(function (g) { return g.stream === name; }));
				});
			}
		};
	};

	/* ---- exchanges ------------------------------------------------------ */

	QE.pages.exchanges = function (main, args) {
		var table;

		if (args.length >= 2)
			return exchangePage(main, args[0], args.slice(1).join('/'));
		table = QE.table({
			caption: 'Exchanges',
			filter: true,
			sort: ['name', 'ascending'],
			filterText: function (x) { return x.name || '(AMQP default)'; },
			columns: [
				{ key: 'name', label: 'Name', show: function (x) { return link(exchangeHref(x.vhost, x.name), x.name || '(AMQP default)'); } },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'type', label: 'Type' },
				{ key: 'durable', label: 'Durable', get: function (x) { return QE.fmtBool(x.durable); } },
				{ key: 'auto_delete', label: 'Auto-delete', get: function (x) { return QE.fmtBool(x.auto_delete); } },
				{ key: 'internal', label: 'Internal', get: function (x) { return QE.fmtBool(x.internal); } },
				{ key: 'in', label: 'Rate in', num: true, get: function (x) { return QE.rate(x.message_stats, 'publish_in'); },
				  show: function (x) { return QE.fmtRate(QE.rate(x.message_stats, 'publish_in')); } },
				{ key: 'out', label: 'Rate out', num: true, get: function (x) { return QE.rate(x.message_stats, 'publish_out'); },
				  show: function (x) { return QE.fmtRate(QE.rate(x.message_stats, 'publish_out')); } }
			]
		});
		QE.append(main, [
			h('h1', { text: 'Exchanges' }),
			QE.form('Add an exchange', [
				vhostField(),
				QE.field('Name', { name: 'name', required: true }),
				QE.field('Type', { tag: 'select', name: 'type', options: [['direct', 'direct'], ['fanout', 'fanout'], ['topic', 'topic'], ['headers', 'headers']] }),
				QE.field('Durable', { type: 'checkbox', name: 'durable', checked: true }),
				QE.field('Arguments (JSON)', { name: 'arguments', placeholder: '{"alternate-exchange": "ae"}', size: 24 })
			], 'Add exchange', function (v, form) {
				return QE.api('PUT', 'exchanges/' + enc(v.vhost) + '/' + enc(v.name), {
					type: v.type, durable: v.durable, auto_delete: false, internal: false,
					arguments: parseArgs(v.arguments, 'Arguments')
				}).then(function () {
					QE.say('Exchange ' + v.name + ' added.');
					form.elements.name.value = '';
					return QE.refresh();
				});
			}),
			table.el
		]);
		return {
			update: function () {
				return QE.api('GET', 'exchanges' + QE.vhostPath()).then(table.set);
			}
		};
	};

	function exchangePage(main, vhost, name) {
		var shown = name === 'amq.default' ? '(AMQP default)' : name;
		var base = 'exchanges/' + enc(vhost) + '/' + enc(name);
		var info = slot();
		var bindings = QE.table({
			caption: 'Bindings from this exchange', hideCaption: true,
			empty: 'No binding.',
			columns: [
				{ key: 'destination', label: 'To', show: function (b) {
					return b.destination_type === 'queue' ? link(queueHref(b.vhost, b.destination), b.destination)
						: link(exchangeHref(b.vhost, b.destination), b.destination);
				} },
				{ key: 'destination_type', label: 'Type' },
				{ key: 'routing_key', label: 'Routing key' },
				{ key: 'arguments', label: 'Arguments', get: function (b) { return QE.fmtArgs(b.arguments); } }
			]
		});

		QE.append(main, [
			h('p', { class: 'crumbs' }, link('#/exchanges', 'Exchanges'), ' / virtual host ', vhost),
			h('h1', null, 'Exchange ', h('span', { text: shown })),
			info,
			section('Bindings', [
				bindings.el,
				name === 'amq.default' ? null : QE.form('Add a binding from ' + shown, [
					QE.field('To queue', { name: 'destination', required: true, size: 18 }),
					QE.field('Routing key', { name: 'routing_key', size: 18 }),
					QE.field('Arguments (JSON)', { name: 'arguments', size: 16 })
				], 'Bind', function (v) {
					return QE.api('POST', 'bindings/' + enc(vhost) + '/e/' + enc(name) + '/q/' + enc(v.destination),
								  { routing_key: v.routing_key, arguments: parseArgs(v.arguments, 'Arguments') })
						.then(function () { QE.say('Binding added.'); return QE.refresh(); });
				})
			]),
			section('Publish a message', QE.form('Publish to ' + shown, [
				QE.field('Routing key', { name: 'routing_key', size: 18 }),
				QE.field('Payload', { tag: 'textarea', name: 'payload', rows: 2 }),
				QE.field('Persistent', { type: 'checkbox', name: 'persistent', checked: true })
			], 'Publish message', function (v, form) {
				return QE.api('POST', base + '/publish', {
					properties: { delivery_mode: v.persistent ? 2 : 1 },
					routing_key: v.routing_key, payload: v.payload, payload_encoding: 'string'
				}).then(function (r) {
					QE.say(r && r.routed === false ? 'Message published, but not routed.' : 'Message published.');
					form.elements.payload.value = '';
				});
			})),
			/^amq\./.test(name) ? null : section('Delete', h('button', {
				type: 'button', class: 'danger', text: 'Delete exchange', onclick: function () {
					confirmThen('Delete exchange ' + name + '?', function () {
						return QE.api('DELETE', base)
							.then(function () { QE.say('Exchange ' + name + ' deleted.'); QE.go('#/exchanges'); })
							.catch(function (e) { QE.say(e.message, true); });
					});
				}
			}))
		]);
		return {
			update: function () {
				return Promise.all([QE.api('GET', base), QE.api('GET', base + '/bindings/source')]).then(function (r) {
					var x = r[0];

					QE.fill(info, QE.props([
						['Virtual host', x.vhost], ['Type', x.type], ['Durable', QE.fmtBool(x.durable)],
						['Auto-delete', QE.fmtBool(x.auto_delete)], ['Internal', QE.fmtBool(x.internal)],
						['Arguments', QE.fmtArgs(x.arguments) || '(none)'],
						['Rate in', QE.fmtRate(QE.rate(x.message_stats, 'publish_in'))],
						['Rate out', QE.fmtRate(QE.rate(x.message_stats, 'publish_out'))]
					]));
					bindings.set(r[1]);
				}).catch(function (e) {
					if (e.status === 404)
						QE.fill(info, h('p', { class: 'error', role: 'alert', text: 'Exchange ' + name + ' in virtual host ' + vhost + ' does not exist.' }));
					else
						throw e;
				});
			}
		};
	}

	/* ---- consumer groups -------------------------------------------------- */

	function groupHref(g) {
		return '#/groups/' + enc(g.vhost) + '/' + enc(g.name);
	}

	function lagPerPartition(g) {
		return (g.partitions || []).map(function (p) {
			return 'p' + p.partition + ': ' + QE.fmtNum(p.lag);
		}).join(', ');
	}

	function groupsTable(caption) {
		return QE.table({
			caption: caption,
			filter: true,
			sort: ['name', 'ascending'],
			empty: 'No consumer group.',
			columns: [
				{ key: 'name', label: 'Group', show: function (g) { return link(groupHref(g), g.name); } },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'stream', label: 'Stream', show: function (g) { return link('#/streams/' + enc(g.vhost) + '/' + enc(g.stream), g.stream); } },
				{ key: 'filter', label: 'Filter', get: function (g) { return g.filter || ''; } },
				{ key: 'ordered', label: 'Ordered', get: function (g) { return QE.fmtBool(g.ordered); } },
				{ key: 'consumers', label: 'Consumers', num: true },
				{ key: 'lag', label: 'Lag', num: true },
				{ key: 'in_flight', label: 'In flight', num: true },
				{ key: 'partitions', label: 'Lag per partition', get: lagPerPartition },
				{ key: 'dead_letter_queue', label: 'Dead-letter queue', show: function (g) {
					return g.dead_letter_queue ? link(queueHref(g.vhost, g.dead_letter_queue), g.dead_letter_queue) : '';
				} }
			]
		});
	}

	QE.pages.groups = function (main, args) {
		var table, body = slot();

		if (args.length >= 2)
			return groupPage(main, args[0], args.slice(1).join('/'));
		table = groupsTable('Consumer groups');
		QE.append(main, [h('h1', { text: 'Consumer groups' }), body]);
		return {
			update: function () {
				return QE.apiOptional('queue-ext/groups' + QE.vhostPath()).then(function (rows) {
					if (missing(rows))
						return QE.fill(body, unavailable('The list of consumer groups', rows));
					if (!body.contains(table.el))
						QE.fill(body, table.el);
					table.set(rows);
				});
			}
		};
	};

	function groupPage(main, vhost, name) {
		var info = slot(), redrive = slot(), group = null;
		var bar = function (lag, max) {
			if (!lag || !max)
				return null;
			return h('span', { class: 'bar', style: 'width:' + Math.max(2, Math.round(80 * lag / max)) + 'px', 'aria-hidden': 'true' });
		};
		var max = 0;
		var parts = QE.table({
			caption: 'Partitions',
			sort: ['partition', 'ascending'],
			columns: [
				{ key: 'partition', label: 'Partition', num: true },
				{ key: 'committed_offset', label: 'Committed offset', num: true },
				{ key: 'end_offset', label: 'End offset', num: true },
				{ key: 'lag', label: 'Lag', num: true, show: function (p) { return [QE.fmtNum(p.lag), bar(p.lag || 0, max)]; } },
				{ key: 'in_flight', label: 'In flight', num: true },
				{ key: 'consumer', label: 'Consumer' }
			]
		});
		var partSel = QE.field('Partition', { tag: 'select', name: 'partition', options: [['', 'all']] });
		var seek = QE.form('Seek ' + name, [
			QE.field('Stream', { name: 'stream', size: 14 }),
			partSel,
			h('fieldset', null, h('legend', { text: 'To' }),
			  QE.field('offset', { type: 'radio', name: 'by', value: 'offset', checked: true }),
			  QE.field('time', { type: 'radio', name: 'by', value: 'timestamp' })),
			QE.field('Offset', { type: 'number', name: 'offset', min: 0, value: '0', size: 8 }),
			QE.field('Time (ISO 8601)', { name: 'timestamp', placeholder: '2026-12-01T10:00:00Z', size: 20 })
		], 'Seek', function (v) {
			var body = { stream: v.stream || (group && group.stream) };

			if (v.by === 'timestamp') {
				if (!v.timestamp)
					throw new Error('Give the time to seek to, e.g. 2026-12-01T10:00:00Z');
				body.timestamp = v.timestamp;
			} else {
				body.partition = v.partition === '' ? null : Number(v.partition);
				body.offset = Number(v.offset);
			}
			return QE.api('POST', 'queue-ext/groups/' + enc(vhost) + '/' + enc(name) + '/seek', body)
				.then(function () { QE.say('Group ' + name + ' moved.'); return QE.refresh(); });
		});

		QE.append(main, [
			h('p', { class: 'crumbs' }, link('#/groups', 'Consumer groups'), ' / virtual host ', vhost),
			h('h1', null, 'Consumer group ', h('span', { text: name })),
			info,
			section('Lag per partition', parts.el),
			section('Seek', seek),
			section('Redrive dead letters', redrive)
		]);
		return {
			update: function () {
				return QE.apiOptional('queue-ext/groups/' + enc(vhost)).then(function (rows) {
					var g = (missing(rows) ? [] : rows).filter(function (x) { return x.name === name; })[0];
					var sel = partSel.querySelector('select');

					if (!g) {
						QE.fill(info, h('p', { class: 'error', role: 'alert', text: 'Consumer group ' + name + ' in virtual host ' + vhost + ' does not exist.' }));
						return;
					}
					if (!group) {
						seek.elements.stream.value = g.stream;
						(g.partitions || []).forEach(function (p) {
							sel.appendChild(h('option', { value: String(p.partition), text: String(p.partition) }));
						});
						QE.fill(redrive, g.dead_letter_queue
							? redriveForm(vhost, g.dead_letter_queue, 'Redrive from ' + g.dead_letter_queue)
							: h('p', { class: 'note', text: 'This group has no dead-letter queue.' }));
					}
					group = g;
					max = (g.partitions || []).reduce(function (m, p) { return Math.max(m, p.lag || 0); }, 0);
					QE.fill(info, QE.props([
						['Virtual host', g.vhost], ['Stream', link('#/streams/' + enc(g.vhost) + '/' + enc(g.stream), g.stream)],
						['Filter', g.filter || '(none)'], ['Ordered', QE.fmtBool(g.ordered)],
						['Consumers', QE.fmtNum(g.consumers)], ['Lag', QE.fmtNum(g.lag)],
						['Dead-letter queue', g.dead_letter_queue ? link(queueHref(g.vhost, g.dead_letter_queue), g.dead_letter_queue) : '(none)']
					]));
					parts.set(g.partitions || []);
				});
			}
		};
	}

	/* the redrive form of one dead-letter queue */
	function redriveForm(vhost, queue, title) {
		return QE.form(title, [
			QE.field('To queue (empty: where each came from)', { name: 'to', size: 16 }),
			QE.field('How many (empty: all)', { type: 'number', name: 'count', min: 1, size: 6 })
		], 'Redrive', function (v) {
			return QE.api('POST', 'queue-ext/queues/' + enc(vhost) + '/' + enc(queue) + '/redrive',
						  { to: v.to || null, count: v.count ? Number(v.count) : null })
				.then(function (r) {
					QE.say((r && typeof r.moved === 'number' ? r.moved : 0) + ' message(s) moved from ' + queue + '.');
					return QE.refresh();
				});
		});
	}

	/* ---- dead letters, delayed and half messages, trace ------------------- */

	QE.pages['dead-letters'] = function (main) {
		var dl = slot(), delayed = slot(), half = slot(), trace = slot();
		var forms = h('div');
		var dlTable = QE.table({
			caption: 'Dead-letter queues',
			filter: true,
			filterText: function (d) { return d.queue; },
			sort: ['queue', 'ascending'],
			empty: 'No dead-letter queue.',
			columns: [
				{ key: 'queue', label: 'Queue', show: function (d) { return link(queueHref(d.vhost, d.queue), d.queue); } },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'messages', label: 'Messages', num: true },
				{ key: 'source', label: 'Dead-lettered from', get: function (d) {
					return Array.isArray(d.source) ? d.source.join(', ') : (d.source || '');
				} }
			]
		});
		var delayedTable = QE.table({
			caption: 'Delayed messages', hideCaption: true,
			sort: ['deliver_at', 'ascending'],
			empty: 'No delayed message.',
			filter: true,
			filterText: function (d) { return d.queue_or_exchange; },
			columns: [
				{ key: 'queue_or_exchange', label: 'Queue or exchange' },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'message_id', label: 'Message id' },
				{ key: 'deliver_at', label: 'Deliver at' }
			]
		});
		var halfTable = QE.table({
			caption: 'Half (transactional) messages', hideCaption: true,
			sort: ['age_seconds', 'descending'],
			empty: 'No half message.',
			columns: [
				{ key: 'id', label: 'Id' },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'topic', label: 'Topic' },
				{ key: 'state', label: 'State' },
				{ key: 'age_seconds', label: 'Age (s)', num: true },
				{ key: 'checks', label: 'Checks', num: true },
				{ key: 'last_error', label: 'Last error' }
			]
		});
		var traceTable = QE.table({
			caption: 'Trace',
			empty: 'No event.',
			columns: [
				{ key: 'message_id', label: 'Message id' },
				{ key: 'at', label: 'At' },
				{ key: 'event', label: 'Event' },
				{ key: 'queue', label: 'Queue' },
				{ key: 'detail', label: 'Detail', get: function (e) {
					return e.detail && typeof e.detail === 'object' ? QE.fmtArgs(e.detail) : (e.detail || '');
				} }
			]
		});
		var shownForms = '';

		QE.append(main, [
			h('h1', { text: 'Dead letters' }),
			dl, section('Redrive', forms),
			section('Delayed messages', delayed),
			section('Half messages', half),
			section('Trace a message', [QE.form('Trace', [
				vhostField(),
				QE.field('Search by', { tag: 'select', name: 'by', options: [['id', 'message id'], ['key', 'key']] }),
				QE.field('Message id or key', { name: 'value', required: true, size: 24 })
			], 'Trace', function (v) {
				return QE.api('GET', 'queue-ext/trace/' + enc(v.vhost) + '?' + v.by + '=' + enc(v.value)).then(function (rows) {
					traceTable.set(rows || []);
					QE.fill(trace, traceTable.el);
				});
			}), trace])
		]);
		return {
			update: function () {
				var vp = QE.vhostPath();

				return Promise.all([QE.apiOptional('queue-ext/dead-letters' + vp),
									QE.apiOptional('queue-ext/delayed' + vp),
									QE.apiOptional('queue-ext/half' + vp)]).then(function (r) {
					var key;

					if (missing(r[0])) {
						QE.fill(dl, unavailable('The list of dead-letter queues', r[0]));
					} else {
						if (!dl.contains(dlTable.el))
							QE.fill(dl, dlTable.el);
						dlTable.set(r[0]);
						/* one redrive form per queue; redrawn only when the set changes */
						key = r[0].map(function (d) { return d.vhost + '\u0000' + d.queue; }).join('\u0001');
						if (key !== shownForms) {
							shownForms = key;
							QE.fill(forms, r[0].length ? r[0].map(function (d) {
								return redriveForm(d.vhost, d.queue, 'Redrive ' + d.queue +
												   (d.vhost === '/' ? '' : ' (virtual host ' + d.vhost + ')'));
							}) : h('p', { class: 'note', text: 'Nothing to redrive.' }));
						}
					}
					if (missing(r[1]))
						QE.fill(delayed, unavailable('The list of delayed messages', r[1]));
					else {
						if (!delayed.contains(delayedTable.el))
							QE.fill(delayed, delayedTable.el);
						delayedTable.set(r[1]);
					}
					if (missing(r[2]))
						QE.fill(half, unavailable('The list of half messages', r[2]));
					else {
						if (!half.contains(halfTable.el))
							QE.fill(half, halfTable.el);
						halfTable.set(r[2]);
					}
				});
			}
		};
	};

	/* ---- connections and channels ----------------------------------------- */

	QE.pages.connections = function (main) {
		var conns = QE.table({
			caption: 'Connections', hideCaption: true,
			filter: true,
			sort: ['name', 'ascending'],
			empty: 'No AMQP client is connected.',
			columns: [
				{ key: 'name', label: 'Name' },
				{ key: 'user', label: 'User' },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'client', label: 'Client', get: function (c) {
					var p = c.client_properties || {};

					return [p.product, p.version].filter(Boolean).join(' ');
				} },
				{ key: 'protocol', label: 'Protocol' },
				{ key: 'channels', label: 'Channels', num: true },
				{ key: 'state', label: 'State' },
				{ key: 'recv_oct', label: 'Received', num: true, show: function (c) { return QE.fmtBytes(c.recv_oct); } },
				{ key: 'send_oct', label: 'Sent', num: true, show: function (c) { return QE.fmtBytes(c.send_oct); } }
			]
		});
		var chans = QE.table({
			caption: 'Channels', hideCaption: true,
			filter: true,
			sort: ['name', 'ascending'],
			empty: 'No channel is open.',
			columns: [
				{ key: 'name', label: 'Channel' },
				{ key: 'user', label: 'User' },
				{ key: 'vhost', label: 'Virtual host' },
				{ key: 'number', label: 'Number', num: true },
				{ key: 'consumer_count', label: 'Consumers', num: true },
				{ key: 'prefetch_count', label: 'Prefetch', num: true },
				{ key: 'messages_unacknowledged', label: 'Unacked', num: true },
				{ key: 'confirm', label: 'Confirm mode', get: function (c) { return QE.fmtBool(c.confirm); } },
				{ key: 'state', label: 'State' }
			]
		});

		QE.append(main, [
			h('h1', { text: 'Connections' }),
			section('AMQP connections', conns.el),
			section('Channels', chans.el)
		]);
		return {
			update: function () {
				var vp = QE.vhostPath();

				return Promise.all([QE.api('GET', vp ? 'vhosts' + vp + '/connections' : 'connections'),
									QE.api('GET', vp ? 'vhosts' + vp + '/channels' : 'channels')]).then(function (r) {
					conns.set(r[0]);
					chans.set(r[1]);
				});
			}
		};
	};
})();
