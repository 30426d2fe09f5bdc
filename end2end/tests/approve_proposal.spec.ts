// A reviewer approves an agent's proposal in the browser, and the approval flows through to the
// agent's view and the executor queue.
import { expect, login, newSession, openQueue, queueRow, test } from './fixtures';

test.describe('approve a proposal', () => {
  test('reviewer approves from the queue; agent sees it confirmed; executor runs it', async ({
    page,
    api,
    server,
  }) => {
    const { id, input } = await api.proposeOk(server.agentToken);
    // A contrasting proposal, so the queue cells are shown to follow the data, whatever wording.
    const contrast = await api.proposeOk(server.agentToken, {
      parameters: { contact_id: 'c-999', email: 'other@example.com' },
      target_refs: [{ type: 'crm_contact', id: 'c-999' }],
      blast_radius: 'large',
      rollback_supported: false,
      risk_level: 'high',
      compliance_context: { gdpr: false, hipaa: false },
    });

    await login(page, server.reviewer);
    await openQueue(page);

    // The queue row shows what a reviewer needs to triage (seed 004's approval UX list).
    const row = queueRow(page, id);
    await expect(row).toBeVisible();
    await expect(row.getByTestId('queue-tool')).toContainText('crm.update_contact');
    await expect(row.getByTestId('queue-target')).toContainText(/crm/i);
    await expect(row.getByTestId('queue-affected')).toHaveText(/\S/);
    await expect(row.getByTestId('queue-rollback')).toHaveText(/\S/);
    await expect(row.getByTestId('queue-risk')).toContainText('medium');
    await expect(row.getByTestId('queue-age')).toHaveText(/\S/);

    const other = queueRow(page, contrast.id);
    await expect(other.getByTestId('queue-risk')).toContainText('high');
    // GDPR mode minimises what the queue shows: field names, not personal values.
    await expect(row.getByTestId('queue-affected')).toContainText('email');
    await expect(row.getByTestId('queue-affected')).not.toContainText('@example.com');
    await expect(other.getByTestId('queue-affected')).toContainText('other@example.com');
    await expect(other.getByTestId('queue-affected')).not.toHaveText(
      (await row.getByTestId('queue-affected').innerText()).trim(),
    );
    await expect(other.getByTestId('queue-rollback')).not.toHaveText(
      (await row.getByTestId('queue-rollback').innerText()).trim(),
    );

    // The summary is the link to the detail page.
    const link = row.getByRole('link', { name: input.intent.summary });
    await expect(link).toHaveAttribute('href', `/proposals/${id}`);
    await link.click();
    await expect(page).toHaveURL(`/proposals/${id}`);

    await expect(page.getByTestId('proposal-summary')).toHaveText(input.intent.summary);
    await expect(page.getByTestId('proposal-reasoning')).toHaveText(input.intent.reasoning);
    await expect(page.getByTestId('proposal-status')).toHaveText('pending');

    await page.locator('button[data-testid=approve]').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(page.getByTestId('proposal-status')).toHaveText('approved');
    await expect(page.getByTestId('proposal-authorization')).toHaveText('confirmed');

    // Decided proposals leave the queue; the undecided one stays.
    await openQueue(page);
    await expect(queueRow(page, id)).toHaveCount(0);
    await expect(queueRow(page, contrast.id)).toBeVisible();

    // The agent sees the decision and who made it; another agent cannot see the proposal at all.
    const seen = await api.getProposal(server.agentToken, id);
    expect(seen.status).toBe(200);
    expect(seen.body?.proposal).toMatchObject({
      id,
      status: 'approved',
      authorization_state: 'confirmed',
      review: { decision: 'approved', decided_by: server.reviewer.username },
    });
    expect((await api.getProposal(server.otherAgentToken, id)).status).toBe(404);

    // The executor gets exactly the approved call, and none of the agent's prose.
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    expect(lease.lease_token).toBeTruthy();
    expect(lease.command).toMatchObject({
      proposal_id: id,
      tool: input.tool,
      parameters: input.parameters,
      idempotency_key: input.idempotency_key,
    });
    const commandText = JSON.stringify(lease);
    expect(commandText).not.toContain(input.intent.summary);
    expect(commandText).not.toContain(input.intent.reasoning);

    const done = await api.complete(server.executorToken, lease.command.id, lease.lease_token, {
      contact_id: 'c-123',
      updated: true,
    });
    expect(done.status).toBe(200);
    const finished = await api.getProposal(server.agentToken, id);
    expect(finished.body?.proposal.status).toBe('succeeded');
  });

  test('approving works with JavaScript disabled (forms post and redirect)', async ({ browser, api, server }) => {
    const { id, input } = await api.proposeOk(server.agentToken);
    const { context, page } = await newSession(browser, server, { javaScriptEnabled: false });
    try {
      await login(page, server.reviewer);
      await openQueue(page);
      await expect(queueRow(page, id)).toBeVisible();

      await page.goto(`/proposals/${id}`);
      await expect(page.getByTestId('proposal-reasoning')).toHaveText(input.intent.reasoning);
      await page.locator('button[data-testid=approve]').click();

      await expect(page.getByTestId('flash-notice')).toBeVisible();
      await expect(page.getByTestId('proposal-status')).toHaveText('approved');
      await expect(page.getByTestId('proposal-authorization')).toHaveText('confirmed');
    } finally {
      await context.close();
    }

    const seen = await api.getProposal(server.agentToken, id);
    expect(seen.body?.proposal).toMatchObject({
      status: 'approved',
      authorization_state: 'confirmed',
      review: { decision: 'approved', decided_by: server.reviewer.username },
    });

    // Run the executor's failure path on this one, and leave the queue clean for later tests.
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    const failed = await api.fail(server.executorToken, lease.command.id, lease.lease_token, {
      code: 'e2e_simulated',
      message: 'CRM answered 503',
    }, 'done');
    expect(failed.status).toBe(200);
    expect((await api.getProposal(server.agentToken, id)).body?.proposal.status).toBe('failed');
  });

  test('a second reviewer deciding an already-decided proposal gets an error; the first decision stands', async ({
    browser,
    api,
    server,
  }) => {
    const { id } = await api.proposeOk(server.agentToken);
    const first = await newSession(browser, server);
    // Without JavaScript the page does not follow live (the clear_queue spec covers that), so it
    // stays stale: the server must refuse the losing click and say who decided.
    const second = await newSession(browser, server, { javaScriptEnabled: false });
    try {
      await login(first.page, server.reviewer);
      await login(second.page, server.reviewer2);

      // Both reviewers have the pending proposal open.
      await first.page.goto(`/proposals/${id}`);
      await second.page.goto(`/proposals/${id}`);
      await expect(first.page.getByTestId('proposal-status')).toHaveText('pending');
      await expect(second.page.getByTestId('proposal-status')).toHaveText('pending');
      await expect(second.page.locator('button[data-testid=approve]')).toBeVisible();

      await first.page.locator('button[data-testid=approve]').click();
      await expect(first.page.getByTestId('flash-notice')).toBeVisible();
      await expect(first.page.getByTestId('proposal-status')).toHaveText('approved');

      // The second reviewer still sees the stale page and clicks approve.
      await second.page.locator('button[data-testid=approve]').click();
      await expect(second.page.getByTestId('flash-error')).toBeVisible();
      await expect(second.page.locator('article.proposal')).toContainText(server.reviewer.username);
      await second.page.reload();
      await expect(second.page.getByTestId('proposal-status')).toHaveText('approved');
    } finally {
      await first.context.close();
      await second.context.close();
    }

    const seen = await api.getProposal(server.agentToken, id);
    expect(seen.body?.proposal).toMatchObject({
      status: 'approved',
      authorization_state: 'confirmed',
      review: { decision: 'approved', decided_by: server.reviewer.username },
    });

    // One decision, one command: the losing click must not have queued a second one.
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    expect((await api.complete(server.executorToken, lease.command.id, lease.lease_token, { ok: true })).status).toBe(
      200,
    );
    const rest = await api.drainCommands(server.executorToken);
    expect(rest.map((l) => l.command.proposal_id)).not.toContain(id);
  });
});
