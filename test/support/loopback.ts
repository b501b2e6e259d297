import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An HTTP server on a free 127.0.0.1 port (the fakes never listen anywhere else). */
export async function listenOnLoopback(): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Stops listening: afterwards the URL refuses connections, which is how "server down" looks. */
export async function closeLoopback(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A request's whole body as text. */
export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise<string>((resolve) => {
    let data = '';
    req.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    req.on('end', () => resolve(data));
  });
}

/**
 * Answers 200 and streams `total` bytes of `fill` repeated whole, in writes of about 16 KB, stopping when the
 * client hangs up; resolves with the bytes written by then (a client that stops reading at a cap hangs up early).
 */
export function streamEndlessly(res: http.ServerResponse, contentType: string, fill: string, total: number): Promise<number> {
  res.writeHead(200, { 'Content-Type': contentType });
  const block = fill.repeat(Math.max(1, Math.floor(16384 / fill.length)));
  let sent = 0;
  return new Promise<number>((resolve) => {
    res.once('close', () => resolve(sent));
    const more = (): void => {
      while (sent < total && !res.destroyed) {
        sent += block.length;
        if (!res.write(block)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
}
