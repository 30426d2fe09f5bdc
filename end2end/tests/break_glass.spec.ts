// Break-glass: the policy wants two approvers for refunds; an admin approves one alone, in an
// emergency, with a written justification. The page then marks it in red, and so does the
// audit trail; a reviewer is never offered it. (Its refusals, its notifications to every admin
// and compliance officer, and its counter in /metrics are tested over HTTP,
// tests/api/break_glass.rs.)
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { CountersignApi } from './api';
import { expect, login, newSession, test } from './fixtures';
import { startServer, type RunningServer } from './server';

const POLICY = `
[defaults]
unknown_agents = "allow"

[tools."payments.refund"]
description = "Money moves with two approvals."
category = "C"
tool_category = "write"
risk = "medium"
required_approvals = 2
`;

test.describe('break-glass', () => {
  let countersign: RunningServer | undefined;

  test.beforeAll(async ({ backend }, workerInfo) => {
    test.setTimeout(180_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-break-glass-e2e-'));
    const policyFile = path.join(dir, 'policy.toml');
    writeFileSync(policyFile, POLICY);
    const logFile = path.join(workerInfo.project.outputDir, `server-break-glass-${workerInfo.project.name}.log`);
    countersign = await startServer(backend, logFile, { args: ['--policy', policyFile] });
  });

  test.afterAll(async () => {
    await countersign?.stop();
  });

  test('an admin approves alone, and the page and the trail say so in red', async ({ browser }) => {
    if (countersign === undefined) throw new Error('the server did not start');
    const server = countersign.info;
    const api = new CountersignApi(server.baseURL, server.agentNames);
    const refund = await api.proposeOk(server.agentToken, {
      tool: { name: 'payments.refund', version: '2026-01' },
      parameters: { charge: 'ch_42', amount: 120 },
      compliance_context: { gdpr: false, hipaa: false },
      blast_radius: 'small',
    });

    // A reviewer approves once; it waits for a second approver, and break-glass is not theirs.
    const reviewer = await newSession(browser, server);
    try {
      await login(reviewer.page, server.reviewer);
      await reviewer.page.goto(`${server.baseURL}/proposals/${refund.id}`);
      await expect(reviewer.page.getByTestId('approve')).toBeVisible();
      await expect(reviewer.page.getByTestId('break-glass')).toHaveCount(0);
      await reviewer.page.getByTestId('approve').click();
      await expect(reviewer.page.getByTestId('proposal-status')).toHaveText('pending');
    } finally {
      await reviewer.context.close();
    }

    const admin = await newSession(browser, server);
    try {
      const page = admin.page;
      await login(page, server.admin);
      await page.goto(`${server.baseURL}/proposals/${refund.id}`);
      const glass = page.getByTestId('break-glass');
      await glass.locator('summary').click();
      await page.getByTestId('break-glass-justification').fill('the customer was charged twice and the bank closes at five');
      await page.getByTestId('break-glass-approve').click();
      await expect(page.getByTestId('proposal-status')).toHaveText('approved');
      await expect(page.getByTestId('broke-glass')).toContainText(server.admin.username);
      await expect(page.locator('tr.break-glass')).toHaveCount(1);
      const seen = await api.getProposal(server.agentToken, refund.id);
      expect(seen.body?.proposal).toMatchObject({ status: 'approved', authorization_state: 'confirmed' });

      await page.goto(`${server.baseURL}/audit?kind=proposal.break_glass`);
      await expect(page.locator('tr[data-kind="proposal.break_glass"]')).toHaveCount(1);
    } finally {
      await admin.context.close();
    }
  });
});
