import http from 'node:http';
import { closeLoopback, listenOnLoopback, readBody } from './loopback';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
}

/** The chat request offered the model a tool of this name natively (research's `finish`, proposals' `propose_edit`). */
export function offersTool(request: RecordedRequest, name: string): boolean {
  const tools = (request.body as { tools?: { function: { name: string } }[] } | null)?.tools ?? [];
  return tools.some((t) => t.function.name === name);
}

/**
 * What the fake Ollama and OpenAI-compatible servers share: a loopback server that records every request
 * (JSON body parsed, path without query), answers generation from a queue of scripts (then a default), and
 * closes so that its URL refuses connections. Each API's routes, error shape and JSON content type are the
 * subclass's.
 */
export abstract class FakeModelServer<Script, Recorded extends RecordedRequest = RecordedRequest> {
  readonly requests: Recorded[] = [];
  /** Replies for generation requests, used in order; when empty, `defaultReply` answers. */
  readonly replies: Script[] = [];
  abstract defaultReply: Script;
  /** How this API labels its JSON bodies. */
  protected abstract readonly jsonType: string;

  /**
   * Kept-alive connections still to be closed as idle, each at the worst moment: as the next request arrives
   * on it, unread and unanswered (a real server's idle timer firing just as the client sends).
   */
  closeIdleConnections = 0;
  /** Resolves when a connection closed as idle is closed on the server's side. */
  readonly idleConnectionClosed: Promise<void>;
  private announceIdleClose!: () => void;
  private readonly answeredOn = new WeakSet<object>();

  protected constructor(private readonly server: http.Server) {
    this.idleConnectionClosed = new Promise<void>((resolve) => (this.announceIdleClose = resolve));
  }

  /** Listens on a free loopback port and hands every request of `make`'s server to it. */
  protected static async listen<T extends FakeModelServer<unknown, RecordedRequest>>(make: (server: http.Server, origin: string) => T): Promise<T> {
    const { server, port } = await listenOnLoopback();
    const fake = make(server, `http://127.0.0.1:${port}`);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void fake.receive(req, res));
    return fake;
  }

  queue(...scripts: Script[]): void {
    this.replies.push(...scripts);
  }

  requestsTo(path: string): Recorded[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Stops listening: afterwards the URL refuses connections, which is how "server down" looks. */
  close(): Promise<void> {
    return closeLoopback(this.server);
  }

  protected nextReply(): Script {
    return this.replies.shift() ?? this.defaultReply;
  }

  private async receive(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (this.answeredOn.has(req.socket) && this.closeIdleConnections > 0) {
      this.closeIdleConnections--;
      req.socket.once('close', () => this.announceIdleClose());
      req.socket.resetAndDestroy();
      return;
    }
    this.answeredOn.add(req.socket);
    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    if (raw) {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch (error) {
        return this.badRequest(res, String(error));
      }
    }
    const path = (req.url ?? '/').split('?')[0]!;
    this.requests.push(this.record(req, path, body));
    return this.route(req, res, path, body);
  }

  /** What a test reads of a request; an API that records more (a header) adds it. */
  protected record(req: http.IncomingMessage, path: string, body: Record<string, unknown>): Recorded {
    return { method: req.method ?? 'GET', path, body } as Recorded;
  }

  protected abstract route(req: http.IncomingMessage, res: http.ServerResponse, path: string, body: Record<string, unknown>): void | Promise<void>;
  /** A body that is not JSON, answered in this API's error shape. */
  protected abstract badRequest(res: http.ServerResponse, message: string): void;

  protected json(res: http.ServerResponse, status: number, data: unknown): void {
    res.writeHead(status, { 'Content-Type': this.jsonType });
    res.end(JSON.stringify(data));
  }
}
