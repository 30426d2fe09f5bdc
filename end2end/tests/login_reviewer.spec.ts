// Signing in and out, and what a signed-in role may do.
import { expect, login, openQueue, test } from './fixtures';

test.describe('sign in', () => {
  test('a visitor who is not signed in is sent to the login page', async ({ page }) => {
    await page.goto('/');
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
    await expect(page.locator('input[name=username]')).toBeVisible();
  });

  test('a wrong password shows an error and does not sign in', async ({ page, server }) => {
    await page.goto('/login');
    await expect(page.locator('button[type=submit]')).toHaveText(/Sign in/);
    await page.locator('input[name=username]').fill(server.reviewer.username);
    await page.locator('input[name=password]').fill(`${server.reviewer.password}-wrong`);
    await page.locator('button[type=submit]').click();

    await expect(page.getByTestId('flash-error')).toBeVisible();
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
    // Still signed out: the queue sends us back.
    await page.goto('/');
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
  });

  test('a reviewer signs in to the queue and signs out again', async ({ page, server }) => {
    await login(page, server.reviewer);
    await openQueue(page);

    await page.locator('button[data-testid=logout]').click();
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
    await page.goto('/');
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
  });

  test('a compliance user can read a proposal but is offered no decision', async ({ page, api, server }) => {
    const { id, input } = await api.proposeOk(server.agentToken);

    await login(page, server.auditor);
    await page.goto(`/proposals/${id}`);
    // Wait for the page itself, so the absence checks below are not vacuous.
    await expect(page.getByTestId('proposal-summary')).toHaveText(input.intent.summary);
    await expect(page.getByTestId('proposal-reasoning')).toHaveText(input.intent.reasoning);
    await expect(page.getByTestId('proposal-status')).toHaveText('pending');

    await expect(page.locator('button[data-testid=approve]')).toHaveCount(0);
    await expect(page.locator('button[data-testid=reject]')).toHaveCount(0);
  });
});
