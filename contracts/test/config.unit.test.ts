/** The configuration schema: defaults, and one clear line naming a bad variable. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadServiceConfig, proxiesToTrust, storageSweepVariables } from '../src/config';

function failure(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the defaults of API.md', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8000);
    expect(config.publicUrl).toBe('http://localhost:8000');
    expect(config.authUrl).toBe('http://localhost:8000/auth');
    expect(config.dataDir).toBe('./.data');
    expect(config.temporalNamespace).toBe('default');
    expect(config.storageBackend).toBe('fs');
    expect(config.logLevel).toBe('info');
  });

  it('derives PUBLIC_URL and AUTH_URL from PORT', () => {
    expect(loadConfig({ PORT: '9000' }).authUrl).toBe('http://localhost:9000/auth');
    expect(loadConfig({ PUBLIC_URL: 'https://api.example.com/' }).authUrl).toBe('https://api.example.com/auth');
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PUBLIC_URL', 'not a url'],
    ['DATABASE_URL', 'mysql://x@y/z'],
    ['TEMPORAL_ADDRESS', 'localhost'],
    ['STORAGE_BACKEND', 'ftp'],
    ['LOG_LEVEL', 'loud'],
    ['PLATFORM_SECRET', 'short'],
    ['SMTP_URL', 'http://mail'],
    ['S3_FORCE_PATH_STYLE', 'maybe'],
  ])('rejects %s=%s with one line naming it', (name, value) => {
    const error = failure({ [name]: value });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toBe(name);
    expect(error.message).toContain(name);
    expect(error.message).not.toContain('\n');
  });

  it('requires S3_ENDPOINT for the s3 backend in a service, not in the supervisor (which can start one)', () => {
    expect(loadConfig({ STORAGE_BACKEND: 's3' }).s3).toMatchObject({ endpoint: undefined, bucket: 'baseplane' });
    const service = { DATABASE_URL: 'postgres://a@b/c', TEMPORAL_ADDRESS: '127.0.0.1:7233', PLATFORM_SECRET: 'x'.repeat(32) };
    expect(() => loadServiceConfig({ ...service, STORAGE_BACKEND: 's3' }, 'X_PORT')).toThrow(/S3_ENDPOINT/);
    expect(failure({ S3_BUCKET: 'Not_A_Bucket' }).variable).toBe('S3_BUCKET');
  });

  it('reads TRUSTED_PROXIES as addresses and CIDR ranges, none by default, loopback trusted always', () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(proxiesToTrust(loadConfig({}))).toEqual(['loopback']);
    const listed = '192.0.2.7, 10.0.0.0/8,2001:db8::/32 , ::ffff:192.0.2.1, uniquelocal';
    expect(loadConfig({ TRUSTED_PROXIES: listed }).trustedProxies).toEqual(['192.0.2.7', '10.0.0.0/8', '2001:db8::/32', '::ffff:192.0.2.1', 'uniquelocal']);
    expect(proxiesToTrust(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8' }))).toEqual(['loopback', '10.0.0.0/8']);
    for (const bad of ['ingress.local', '10.0.0.0/33', '256.0.0.1', '10.0.0.1/8/8', '2001:db8::/129', 'gggg::1', '10.0.0.1,', '*']) {
      const error = failure({ TRUSTED_PROXIES: bad });
      expect(error.variable, bad).toBe('TRUSTED_PROXIES');
      expect(error.message).not.toContain('\n');
    }
  });

  it('reads the S3 upload stall timeout in whole seconds, 30 by default', () => {
    expect(loadConfig({}).s3.uploadStallTimeoutSeconds).toBe(30);
    expect(loadConfig({ S3_UPLOAD_STALL_TIMEOUT_SECONDS: '8' }).s3.uploadStallTimeoutSeconds).toBe(8);
    expect(failure({ S3_UPLOAD_STALL_TIMEOUT_SECONDS: '0' }).variable).toBe('S3_UPLOAD_STALL_TIMEOUT_SECONDS');
    expect(failure({ S3_UPLOAD_STALL_TIMEOUT_SECONDS: '2.5' }).variable).toBe('S3_UPLOAD_STALL_TIMEOUT_SECONDS');
  });

  it('reads the storage sweep\'s interval and grace in whole minutes, 60 each by default, 0 turning the schedule off', () => {
    expect(storageSweepVariables({})).toEqual({ intervalMinutes: 60, graceMinutes: 60 });
    expect(storageSweepVariables({ STORAGE_SWEEP_INTERVAL_MINUTES: '0', STORAGE_SWEEP_GRACE_MINUTES: '10080' })).toEqual({ intervalMinutes: 0, graceMinutes: 10080 });
    for (const [name, value] of [['STORAGE_SWEEP_INTERVAL_MINUTES', '10081'], ['STORAGE_SWEEP_INTERVAL_MINUTES', '1.5'], ['STORAGE_SWEEP_GRACE_MINUTES', '-1'], ['STORAGE_SWEEP_GRACE_MINUTES', 'hour']]) {
      // Checked by every process that loads the configuration, so a bad one stops `npm start` before anything starts.
      const error = failure({ [name!]: value! });
      expect(error.variable).toBe(name);
      expect(error.message).toContain(`"${value}"`);
    }
  });

  it('never prints a password from a URL', () => {
    const error = failure({ DATABASE_URL: 'mysql://user:hunter2@host/db' });
    expect(error.message).not.toContain('hunter2');
  });

  it('requires what the supervisor provides to a service process', () => {
    expect(() => loadServiceConfig({}, 'X_PORT')).toThrow(/DATABASE_URL/);
    const config = loadServiceConfig(
      { DATABASE_URL: 'postgres://a@b/c', TEMPORAL_ADDRESS: '127.0.0.1:7233', PLATFORM_SECRET: 'x'.repeat(32), X_PORT: '1234' },
      'X_PORT',
    );
    expect(config.tenantDatabaseUrl).toBe('postgres://a@b/c');
    expect(config.listenPort).toBe(1234);
  });
});
