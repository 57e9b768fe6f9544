import type { ErrorCode, ExitOf } from './error-codes.js';
import { ExitCode } from './exit-codes.js';

export type { CodeOf, ErrorCode, ExitOf } from './error-codes.js';

/**
 * The one error model: a refusal or failure that a tool reports as
 * `{"ok":false,"error":{"code","message"}}` and an exit code from the table.
 * Callers branch on `code` (kebab-case, stable) or `exitCode`, never on the message.
 * Messages name the cause (a field, a file, a path), never a secret's contents.
 * The code is one of error-codes.ts and the exit one that code has there (the compiler checks
 * both), so the list of codes is never out of date.
 */
export class ToolError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly exitCode: number;
  /** Extra machine-readable detail, copied into the error document. */
  readonly detail: Record<string, unknown> | undefined;

  constructor(exit: ExitOf<C>, code: C, message: string, detail?: Record<string, unknown>) {
    super(message);
    this.name = 'ToolError';
    this.code = code;
    this.exitCode = ExitCode[exit];
    this.detail = detail;
  }
}

export interface ErrorDocument {
  ok: false;
  error: { code: ErrorCode; message: string } & Record<string, unknown>;
}

/** Turns anything thrown into the error document and its exit code; unknown throws are bugs (91). */
export function toErrorDocument(err: unknown): { document: ErrorDocument; exitCode: number } {
  if (err instanceof ToolError) {
    return {
      document: { ok: false, error: { code: err.code, message: err.message, ...(err.detail ?? {}) } },
      exitCode: err.exitCode,
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    document: { ok: false, error: { code: 'internal', message: `internal error (a bug): ${message}` } },
    exitCode: ExitCode.internal,
  };
}

export function isToolError(err: unknown, code?: ErrorCode): err is ToolError {
  return err instanceof ToolError && (code === undefined || err.code === code);
}
