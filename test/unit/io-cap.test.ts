/**
 * The modelled I/O cap's pure parts: which hosts have a cap to lift, that withoutCap() switches the device model off
 * for preparation and on again whatever the preparation does, and the report's line on uncapped preparation.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { IoCap, ioCapPlan, type IoCapHost } from '../../lib/io-cap';
import { GP3, recorder } from '../helpers/io-cap';
import { renderMarkdown, uncappedPreparationLine } from '../../analysis/report/markdown';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import type { ExperimentResult } from '../../common/results/result';

describe('ioCapPlan', () => {
  it('lifts a modelled gp3 volume: the model of its server', () => {
    expect(ioCapPlan(GP3)).toEqual({ liftable: true, socket: GP3.volume!.socket, model: 'gp3' });
    expect(ioCapPlan({ ...GP3, kind: 'nvme', volume: { ...GP3.volume!, model: 'nvme' } })).toMatchObject({ liftable: true, model: 'nvme' });
  });

  it.each<[string, IoCapHost, RegExp]>([
    ['a local disk', { kind: 'local-disk', emulated: false }, /no modelled cap on this local-disk host/],
    ['a real EBS volume on AWS', { kind: 'ebs', emulated: true }, /real EBS volume's cap cannot be lifted: preparation runs at the real cap/],
    ['an instance store on AWS', { kind: 'instance-store', emulated: true }, /no cap on this instance-store host/],
    ['gp3 not modelled (no root)', { ...GP3, emulated: false, volume: undefined }, /not modelled/],
    ['gp3 without a volume recorded', { ...GP3, volume: undefined }, /no modelled volume/],
  ])('is a no-op that says why on %s', (_name, host, note) => {
    const cap = new IoCap(host, recorder());
    expect(cap.liftable).toBe(false);
    expect(cap.note).toMatch(note);
  });
});

describe('IoCap', () => {
  it('switches the model off for the preparation and on again before returning', async () => {
    const model = recorder();
    const cap = new IoCap(GP3, model);
    const seen = await cap.withoutCap(async () => {
      model.calls.push('prepare');
      return cap.capped;
    });
    expect(seen).toBe(false);
    expect(cap.capped).toBe(true);
    expect(model.calls).toEqual(['model off', 'prepare', 'model on']);
  });

  it('switches the model on again when the preparation fails, and the failure stays the failure', async () => {
    const model = recorder();
    const cap = new IoCap(GP3, model);
    await expect(cap.withoutCap(() => Promise.reject(new Error('bloat failed')))).rejects.toThrow('bloat failed');
    expect(cap.capped).toBe(true);
    expect(model.calls).toEqual(['model off', 'model on']);
  });

  it('switches the model on again after a lift that failed half-way', async () => {
    const model = recorder({ on: false, error: 'the volume server did not answer' });
    const cap = new IoCap(GP3, model);
    await expect(cap.withoutCap(async () => model.calls.push('prepare'))).rejects.toThrow('did not answer');
    expect(model.calls).toEqual(['model on']);
    expect(cap.capped).toBe(true);
  });

  it('keeps the model off through a nested preparation until the outermost ends', async () => {
    // configurePostgres lifts the cap around initdb; a restore restarts the server inside its own preparation.
    const model = recorder();
    const cap = new IoCap(GP3, model);
    await cap.withoutCap(async () => {
      await cap.withoutCap(async () => model.calls.push('initdb'));
      model.calls.push('checks');
      expect(cap.capped).toBe(false);
    });
    expect(model.calls).toEqual(['model off', 'initdb', 'checks', 'model on']);
    expect(cap.capped).toBe(true);
  });

  it('prepare() counts a preparation uncapped only when the volume admitted none of its I/O on the model', async () => {
    const model = recorder();
    const cap = new IoCap(GP3, model);
    model.io(); // Measured I/O before: not the preparation's.
    const off = await cap.prepare(async () => {
      await cap.withoutCap(async () => model.io());
      model.io();
      return 'restored';
    });
    expect(off).toEqual({ value: 'restored', preparedWithoutCap: true, modelledIos: 0 });
    // Data made to break it: a preparation whose model came back half-way (what the nested lift did before) is not
    // uncapped, whatever the code around it meant.
    const broken = await cap.prepare(async () => {
      await model.setModel(true);
      model.io();
      model.io();
    });
    expect(broken).toMatchObject({ preparedWithoutCap: false, modelledIos: 2 });
    expect(model.calls.at(-1)).toBe('model on');
  });

  it('prepare() claims nothing where there is no cap to lift', async () => {
    const model = recorder();
    const cap = new IoCap({ kind: 'local-disk', emulated: false }, model);
    expect(await cap.prepare(async () => 7)).toEqual({ value: 7, preparedWithoutCap: false });
    expect(model.calls).toEqual([]);
  });

  it('tells nothing to a host without a modelled volume', async () => {
    const model = recorder();
    const cap = new IoCap({ kind: 'ebs', emulated: true }, model);
    expect(await cap.withoutCap(async () => cap.capped)).toBe(true);
    await cap.apply();
    expect(model.calls).toEqual([]);
  });
});

describe('the report on uncapped preparation', () => {
  const fixture = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'results', 'predict-check-1.json'), 'utf8')) as ExperimentResult;

  it('says nothing when every preparation ran capped (results from before)', () => {
    expect(uncappedPreparationLine(fixture)).toBeNull();
    expect(renderMarkdown(fixture)).not.toMatch(/cap lifted/);
  });

  it('names the hosts and the preparation that ran uncapped, in one line', () => {
    const result = structuredClone(fixture);
    const [first] = Object.values(result.classes).filter((c) => c.kind === 'emulated-ebs');
    const c = first.clusters[0];
    c.load = { ...c.load!, preparedWithoutCap: true };
    if (c.phases.vacuum) c.phases.vacuum.preparedWithoutCap = true;
    const line = uncappedPreparationLine(result)!;
    expect(line).toContain(`${c.hostId} (load${c.phases.vacuum ? ', making the dead tuples' : ''})`);
    expect(line).toMatch(/not storage figures/);
    expect(line).not.toContain('\n');
    expect(renderMarkdown(result).split('\n').filter((l) => l === line)).toHaveLength(1);
  });
});
