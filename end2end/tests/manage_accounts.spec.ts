// An admin manages accounts and tokens from the admin pages: a token made there is shown once
// and works on the API until it is revoked, when its very next request gets 401; a disabled
// person's open session ends at their next request.
import { expect, login, newSession, test } from './fixtures';

test.describe('manage accounts and tokens', () => {
  test('admin creates and revokes a token; the revoked token gets 401 at once', async ({ page, api, server }) => {
    await login(page, server.admin);
    await expect(page.getByTestId('nav-admin')).toBeVisible();
    await page.getByTestId('nav-admin').click();
    await page.getByTestId('admin-tokens').click();
    await expect(page).toHaveURL('/admin/tokens');

    const name = `e2e-agent-${Date.now()}`;
    await page.getByTestId('token-name').fill(name);
    await page.getByTestId('create-token').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    const token = (await page.getByTestId('secret').innerText()).trim();
    expect(token.length).toBeGreaterThan(20);

    const proposed = await api.propose(token, { proposed_by: name });
    expect(proposed.status, proposed.text).toBe(201);
    const id = proposed.body?.proposal.id ?? '';
    expect((await api.getProposal(token, id)).status).toBe(200);

    // Shown once: a reload does not show it again.
    await page.reload();
    await expect(page.getByTestId('secret')).toHaveCount(0);

    const row = page.locator(`[data-testid=token-row][data-name="${name}"]`);
    await row.getByTestId('revoke-token').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(row.getByTestId('token-revoked')).not.toHaveText('');
    expect((await api.getProposal(token, id)).status).toBe(401);
  });

  test('admin disables a user; their open session ends', async ({ page, browser, server }) => {
    const { context, page: victim } = await newSession(browser, server);
    await login(victim, server.disposable);
    await expect(victim.getByTestId('viewer')).toBeVisible();

    await login(page, server.admin);
    await page.goto('/admin/users');
    await page.getByTestId(`disable-${server.disposable.username}`).click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(page.getByTestId(`enable-${server.disposable.username}`)).toBeVisible();

    await victim.goto('/');
    await expect(victim).toHaveURL(/\/login/);
    await context.close();
  });
});

