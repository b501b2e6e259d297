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
