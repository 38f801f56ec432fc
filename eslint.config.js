// ESLint flat config: typescript-eslint recommended rules, plus the import boundary of the repo:
// apps import libs by package name (@mesh/<lib>), never a deep path, and never another app;
// apps never import kafkajs: Kafka is the bus's business.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.kafka/**', 'bench/results/**', 'charts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-unsafe-function-type': 'off',
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@mesh/*/*'], message: 'import a lib by its package name only' },
            { group: ['**/libs/*/src/*', '**/apps/*/src/*', '../../libs/*', '../../apps/*'], message: 'no deep imports across packages' },
          ],
        },
      ],
    },
  },
  {
    files: ['apps/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'kafkajs', message: 'apps reach Kafka through @mesh/bus (it re-exports the kafkajs types they need)' }],
          patterns: [
            { group: ['kafkajs/*'], message: 'apps reach Kafka through @mesh/bus' },
            { group: ['@mesh/app-*'], message: 'an app never imports another app' },
            { group: ['@mesh/*/*'], message: 'import a lib by its package name only' },
          ],
        },
      ],
    },
  },
);
