// Sign-in throttling, seen from the browser: five wrong passwords make the sixth attempt wait,
// even with the right password, and the refusal is in the audit trail. And the pages run under
// a Content-Security-Policy without 'unsafe-inline' scripts: they still hydrate, and the
// console shows no violation (the `page` fixture fails any test whose console does).
import { expect, login, newSession, test } from './fixtures';

test.describe('throttle sign-in', () => {
  test('pages carry a nonce-based CSP and still hydrate', async ({ page }) => {
    const res = await page.goto('/login');
    const csp = res?.headers()['content-security-policy'] ?? '';
    const scriptSrc = csp.split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src')) ?? '';
    expect(scriptSrc).toMatch(/'nonce-[0-9a-f]{32}'/);
    expect(scriptSrc).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res?.headers()['x-content-type-options']).toBe('nosniff');
    expect(res?.headers()['referrer-policy']).toBe('same-origin');

    // The wasm ran: the hydrated router follows a history change without loading a page, and
    // the page shows the notice the new query string names.
    await expect(page.locator('input[name=username]')).toBeVisible();
    await expect
      .poll(() => page.evaluate(() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('.wasm'))))
      .toBe(true);
    await page.evaluate(() => {
      (window as unknown as { stillHere: boolean }).stillHere = true;
    });
    await expect(async () => {
      await page.evaluate(() => {
        history.pushState(null, '', '/login?notice=signed_out');
        window.dispatchEvent(new PopStateEvent('popstate'));
      });
      await expect(page.getByTestId('flash-notice')).toHaveText('You are signed out.', { timeout: 1_000 });
    }).toPass();
    const stillHere = await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere === true);
    expect(stillHere, 'the notice came from the hydrated app, not a page load').toBe(true);
  });

  test('the sixth attempt after five wrong passwords is refused, and audited', async ({ page, browser, server }) => {
    const user = server.lockout;
    for (let attempt = 1; attempt <= 5; attempt++) {
      await page.goto('/login');
      await page.locator('input[name=username]').fill(user.username);
      await page.locator('input[name=password]').fill(`${user.password}-wrong-${attempt}`);
      await page.locator('button[type=submit]').click();
      await expect(page).toHaveURL(/\/login\?error=invalid_credentials$/);
      await expect(page.getByTestId('flash-error')).toHaveText('That username and password do not match.');
    }

    // The right password now: still refused, with words that say why.
    await page.goto('/login');
    await page.locator('input[name=username]').fill(user.username);
    await page.locator('input[name=password]').fill(user.password);
    await page.locator('button[type=submit]').click();
    await expect(page).toHaveURL(/\/login\?error=throttled$/);
    await expect(page.getByTestId('flash-error')).toContainText('Too many failed sign-ins');
    await page.goto('/');
    await expect(page).toHaveURL(/\/login(\?.*)?$/);

    // A compliance officer finds the refusal in the trail.
    const { context, page: auditor } = await newSession(browser, server);
    await login(auditor, server.auditor);
    await auditor.goto(`/audit?kind=auth.sign_in_throttled`);
    const subjects = await auditor.getByTestId('audit-row').locator('.subject').allInnerTexts();
    expect(subjects).toContain(`user:${user.username}`);
    await context.close();
  });
});
