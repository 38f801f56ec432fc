import { RequestMalformedError } from '@a2a-js/sdk/errors';

/**
 * The same messageId was sent to the same agent with different content. A2A has no dedicated
 * code for it, so it is INVALID_PARAMS (-32602 / HTTP 400) with ErrorInfo metadata naming the
 * conflict, so clients can tell it from other malformed requests.
 */
export function messageIdConflict(messageId: string): RequestMalformedError {
  return new RequestMalformedError({
    message: `messageId "${messageId}" was already used for this agent with different content; use a new messageId for a new message`,
    metadata: { conflict: 'MESSAGE_ID_REUSED', messageId },
  });
}
