/**
 * Test seams in workflow bundles: a module of the lab's workflow code swapped for a test's own when the bundle is
 * built (a weak tag hash that forces two runs onto one host id; a naming scheme that ignores its patch). Only a test's
 * bundle has them: nothing a run's input holds reaches the bundler.
 */
import type { Configuration } from 'webpack';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- webpack ships with @temporalio/worker's bundler
const webpack = require('webpack') as typeof import('webpack');

/** A webpackConfigHook that resolves `request` made from a file in a folder ending with `fromDir` to `replacement`. */
export function swapModule(request: string, fromDir: string, replacement: string): (config: Configuration) => Configuration {
  return (config) => ({
    ...config,
    plugins: [
      ...(config.plugins ?? []),
      new webpack.NormalModuleReplacementPlugin(/.*/, (resource: { request: string; context: string }) => {
        if (resource.request === request && resource.context.replace(/\/+$/, '').endsWith(fromDir)) resource.request = replacement;
      }),
    ],
  });
}
