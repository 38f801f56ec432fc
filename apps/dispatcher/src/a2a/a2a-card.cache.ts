import type { Response } from 'express';

/**
 * The card of an agent only its own tenant sees: the SDK's card handlers mark every card `public`,
 * which lets a shared cache store it (despite the request's Authorization) and hand it to anyone.
 * Its Cache-Control is made `private` (a browser may keep it, no shared cache), and it varies by
 * the credential that was allowed to see it.
 */
export function keepCardPrivate(res: Response): void {
  res.append('Vary', 'Authorization');
  const setHeader = res.setHeader.bind(res);
  res.setHeader = ((name: string, value: number | string | readonly string[]) =>
    setHeader(
      name,
      name.toLowerCase() === 'cache-control'
        ? [
            'private',
            ...String(value)
              .split(/,\s*/)
              .filter((d) => d !== 'public'),
          ].join(', ')
        : value,
    )) as Response['setHeader'];
}
