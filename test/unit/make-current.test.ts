import type { Client } from '@temporalio/client';
import { askAgainAfter, makeCurrent } from '../../worker/versioning';

/** A client whose setWorkerDeploymentCurrentVersion answers with each of `answers` in turn (a gRPC code, or ok). */
function clientAnswering(answers: (number | 'ok')[]): { client: Client; calls: () => number } {
  let calls = 0;
  const setWorkerDeploymentCurrentVersion = async () => {
    const answer = answers[Math.min(calls++, answers.length - 1)];
    if (answer === 'ok') return {};
    throw Object.assign(new Error(answer === 4 ? 'Timeout expired' : `code ${answer}`), { code: answer });
  };
  const client = { options: { namespace: 'default' }, workflowService: { setWorkerDeploymentCurrentVersion } } as unknown as Client;
  return { client, calls: () => calls };
}

const VERSION = { deploymentName: 'lab-test', buildId: '1.0.0' };

describe('makeCurrent under a loaded server', () => {
  it('asks again after a timed-out call, an unpolled version and an unavailable server, until it is set', async () => {
    const { client, calls } = clientAnswering([4, 5, 9, 14, 'ok']);
    await makeCurrent(client, VERSION, 30_000);
    expect(calls()).toBe(5);
  });

  it('fails at once on a bad argument or a refusal, naming the gRPC code', async () => {
    for (const code of [3, 7]) {
      const { client, calls } = clientAnswering([code]);
      await expect(makeCurrent(client, VERSION, 30_000)).rejects.toThrow(new RegExp(`could not make lab-test\\.1\\.0\\.0 current: code ${code} \\(gRPC code ${code}\\)$`));
      expect(calls()).toBe(1);
    }
  });

  it('gives up at its deadline with the last answer', async () => {
    const { client } = clientAnswering([4]);
    await expect(makeCurrent(client, VERSION, 600)).rejects.toThrow(/current: Timeout expired \(gRPC code 4\)$/);
  });

  it('names which codes are worth asking again', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16].filter(askAgainAfter)).toEqual([4, 5, 9, 14]);
    expect(askAgainAfter(undefined)).toBe(false);
  });
});
