// The audit pages are for compliance officers and admins: a reviewer is refused (403), offered
// no link, and every refusal is itself in the trail.
import { expect, login, newSession, test } from './fixtures';

test.describe('deny the audit pages to a reviewer', () => {
  test('a reviewer cannot open the trail, its charts, a timeline or an export', async ({
    page,
    browser,
    api,
    server,
  }) => {
    const { id } = await api.proposeOk(server.agentToken);
    await login(page, server.reviewer2);
    await expect(page.getByTestId('viewer')).toBeVisible();
    await expect(page.getByTestId('nav-audit')).toHaveCount(0);

    for (const path of ['/audit', '/audit/charts', `/audit/proposals/${id}`]) {
      const res = await page.goto(path);
      expect(res?.status(), path).toBe(403);
      await expect(page.getByTestId('forbidden')).toBeVisible();
      await expect(page.getByTestId('audit-row')).toHaveCount(0);
    }
    await page.goto('/audit');
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.screenshot({ path: '/tmp/shots/audit-forbidden.png' });
    await page.screenshot({ path: '/tmp/shots/audit-forbidden-full.png', fullPage: true });
    // The export form, posted with the reviewer's own good token, is refused too.
    await page.goto('/');
    const csrf = await page.locator('input[name=csrf_token]').first().getAttribute('value');
    const res = await page.request.post('/audit/export.zip', { form: { csrf_token: csrf ?? '' } });
    expect(res.status()).toBe(403);

    // A compliance officer sees each refusal in the trail.
    const { context, page: auditor } = await newSession(browser, server);
    await login(auditor, server.auditor);
    await auditor.goto(`/audit?kind=access.denied&actor=${server.reviewer2.username}`);
    const subjects = await auditor.getByTestId('audit-row').locator('.subject').allInnerTexts();
    for (const subject of ['page:/audit', 'page:/audit/charts', 'page:/audit/proposals', 'page:/audit/export']) {
      expect(subjects).toContain(subject);
    }
    await context.close();
  });
});
