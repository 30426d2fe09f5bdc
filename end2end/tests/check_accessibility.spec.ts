// Every page a person uses, checked by axe-core against WCAG 2.2 A and AA in Chromium, at the
// desktop width and at a phone's: the sign-in page, the queue (filtered and not), a proposal
// (GDPR, with its command sheet and decision forms), runs, the audit trail, its charts, a
// proposal's timeline and the admin pages.
import { expect, expectAccessible, login, newSession, test } from './fixtures';

const WIDTHS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
];

for (const size of WIDTHS) {
  test(`every page passes axe-core at ${size.name} width`, async ({ browser, api, server }, testInfo) => {
    // A dozen pages, each screenshotted and checked: on a busy two-core machine that is more
    // than the default minute.
    test.setTimeout(180_000);
    const { id } = await api.proposeOk(server.agentToken, { risk_level: 'high' });
    const viewport = { width: size.width, height: size.height };
    const shot = (name: string) => testInfo.outputPath(`${size.name}-${name.replace(/[^a-z0-9]+/gi, '_')}.png`);

    const anonymous = await newSession(browser, server, { viewport });
    try {
      await anonymous.page.goto('/login');
      await expectAccessible(anonymous.page, '/login', shot('login'));
    } finally {
      await anonymous.context.close();
    }

    const reviewer = await newSession(browser, server, { viewport });
    try {
      await login(reviewer.page, server.reviewer);
      for (const path of ['/', `/?risk=high&sort=risk`, `/proposals/${id}`, '/runs', '/grants', '/account']) {
        await reviewer.page.goto(path);
        await expect(reviewer.page.locator('main')).toBeVisible();
        await expectAccessible(reviewer.page, path, shot(path));
      }
    } finally {
      await reviewer.context.close();
    }

    const auditor = await newSession(browser, server, { viewport });
    try {
      await login(auditor.page, server.auditor);
      for (const path of ['/audit', '/audit/charts', `/audit/proposals/${id}`, '/insights']) {
        await auditor.page.goto(path);
        await expect(auditor.page.locator('main')).toBeVisible();
        await expectAccessible(auditor.page, path, shot(path));
      }
    } finally {
      await auditor.context.close();
    }

    const admin = await newSession(browser, server, { viewport });
    try {
      await login(admin.page, server.admin);
      for (const path of ['/admin/users', '/admin/tokens', '/admin/webhooks', '/admin/gateway']) {
        await admin.page.goto(path);
        await expect(admin.page.locator('main')).toBeVisible();
        await expectAccessible(admin.page, path, shot(path));
      }
    } finally {
      await admin.context.close();
    }
  });
}
