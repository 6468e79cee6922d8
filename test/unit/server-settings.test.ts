import { readFileSync } from 'node:fs';
import path from 'node:path';
import { resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { REFUSED_SETTINGS, refusedSetting, refusedSettingsMarkdown } from '../../common/input/server-settings';
import { resolveSpec } from '../../common/input/resolve';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { problemsOf } from '../helpers/spec-problems';

const withSettings = (settings: Record<string, unknown>) => ({ preset: 'ci', postgres: { settings } });

describe('server settings a spec may not set', () => {
  // One of each family, and the settings of the issue: each refused with its reason, naming the field.
  it.each([
    ['archive_command', 'touch /tmp/x', 'runs a program'],
    ['restore_command', 'cp %f %p', 'runs a program'],
    ['archive_cleanup_command', 'rm -rf /', 'runs a program'],
    ['ssl_passphrase_command', 'echo x', 'TLS'],
    ['shared_preload_libraries', 'auto_explain', 'loads code'],
    ['session_preload_libraries', 'x', 'loads code'],
    ['archive_library', 'basic_archive', 'loads code'],
    ['dynamic_library_path', '/tmp', 'loads code'],
    ['jit_provider', 'llvmjit', 'loads code'],
    ['data_directory', '/etc', 'outside the data folder'],
    ['hba_file', '/tmp/hba', 'outside the data folder'],
    ['external_pid_file', '/tmp/pid', 'outside the data folder'],
    ['log_directory', '/tmp', 'outside the data folder'],
    ['log_filename', '../../x.log', 'outside the data folder'],
    ['include', '/etc/passwd', 'outside the data folder'],
    ['include_dir', '/etc', 'outside the data folder'],
    ['ssl_cert_file', '/etc/passwd', 'TLS'],
    ['krb_server_keyfile', '/etc/krb5.keytab', 'outside the data folder'],
    ['listen_addresses', '*', 'beyond the host'],
    ['port', 5432, 'beyond the host'],
    ['unix_socket_directories', '/tmp', 'beyond the host'],
    ['primary_conninfo', 'host=evil', 'beyond the host'],
    ['zero_damaged_pages', 'on', 'developer option'],
    ['archive_mode', 'on', 'managed by the lab'],
    ['wal_level', 'minimal', 'managed by the lab'],
    ['synchronous_standby_names', '*', 'managed by the lab'],
    ['shared_buffers', '1GB', 'postgres.sharedBuffersMiB instead'],
    ['recovery_target_time', '2026-01-01', 'managed by the lab'],
  ])('refuses %s', (name, value, fragment) => {
    const problems = problemsOf(resolveSpec, withSettings({ [name]: value }));
    expect(problems).toEqual([{ path: `postgres.settings.${name}`, message: expect.stringContaining(fragment) }]);
    expect(problems[0].message).toMatch(/refused: .*; (remove it|set .* instead)$/);
  });

  it('refuses them in both drills too', () => {
    expect(problemsOf(resolveRestoreDrill, withSettings({ archive_command: 'x' }))[0].path).toBe('postgres.settings.archive_command');
    expect(problemsOf(resolveFailoverDrill, withSettings({ ssl_passphrase_command: 'x' }))[0].path).toBe('postgres.settings.ssl_passphrase_command');
  });

  it("catches the same kinds in other versions' names by pattern, case-insensitively", () => {
    expect(refusedSetting('some_future_command')?.family).toBe('program');
    expect(refusedSetting('oauth_validator_libraries')?.family).toBe('code');
    expect(refusedSetting('ssl_tls13_ciphers')?.family).toBe('tls');
    expect(refusedSetting('ARCHIVE_COMMAND')?.family).toBe('program');
    expect(refusedSetting('work_mem')).toBeUndefined();
    expect(refusedSetting('search_path')).toBeUndefined();
    expect(refusedSetting('log_file_mode')).toBeUndefined();
  });

  it.each([
    ['a newline', 'a\nb', '"\\n"'],
    ['a carriage return', 'a\rb', '"\\r"'],
    ['a tab', 'a\tb', '"\\t"'],
    ['a NUL', 'a\u0000b', '"\\u0000"'],
  ])('refuses a value with %s', (_, value, shown) => {
    const [problem] = problemsOf(resolveSpec, withSettings({ search_path: value }));
    expect(problem.path).toBe('postgres.settings.search_path');
    expect(problem.message).toContain(`control character (${shown})`);
    expect(problem.message).toContain('remove newlines');
  });

  it("refuses an extension's setting: no library is loaded to read it", () => {
    const [problem] = problemsOf(resolveSpec, withSettings({ 'auto_explain.log_min_duration': 0 }));
    expect(problem).toEqual({ path: 'postgres.settings.auto_explain.log_min_duration', message: expect.stringContaining('loads no extension libraries') });
  });

  it('reports every refused setting at once and accepts ordinary ones', () => {
    const problems = problemsOf(resolveSpec, withSettings({ archive_command: 'x', port: 1, work_mem: '8MB', checkpoint_timeout: '10min' }));
    expect(problems.map((p) => p.path).sort()).toEqual(['postgres.settings.archive_command', 'postgres.settings.port']);
    expect(problemsOf(resolveSpec, withSettings({ work_mem: '8MB', jit: false, random_page_cost: 1.1 }))).toEqual([]);
  });

  it('lists each exact name once', () => {
    const names = REFUSED_SETTINGS.map((r) => r.name).filter((n): n is string => typeof n === 'string');
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toBe(name.toLowerCase());
  });

  it('the threat model lists the refused settings exactly as the code does', () => {
    // docs/threat-model.md's list is this function's output, pasted: when the list changes, paste it again.
    const doc = readFileSync(path.join(PROJECT_ROOT, 'docs', 'threat-model.md'), 'utf8');
    expect(doc).toContain(refusedSettingsMarkdown());
  });
});
