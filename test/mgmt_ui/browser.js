// Debian's Chromium, headless, at a laptop's screen size: how the UI test
// (ui_check.js) and the render bench (bench/mgmt_ui_render.js) start it.
// puppeteer-core is passed in, resolved from the caller's node_modules.
'use strict';

function launch(puppeteer) {
	return puppeteer.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
			'--disable-extensions', '--disable-background-networking', '--disable-sync',
			'--window-size=1366,768'],
		defaultViewport: { width: 1366, height: 768 },
		protocolTimeout: 120000
	});
}

module.exports = { launch };
