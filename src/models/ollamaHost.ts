/** Ollama's own default: the server on this machine. */
export const DEFAULT_OLLAMA_HOST = 'http://127.0.0.1:11434';

/**
 * The server to talk to: an explicit setting wins, else OLLAMA_HOST read the way the Ollama CLI reads it
 * (`host`, `host:port`, `scheme://host[:port][/path]`; a bare host gets port 11434, an explicit http/https
 * scheme without a port gets 80/443), else the local default. The `ollama` npm client does not read
 * OLLAMA_HOST itself, so this is the one place that does.
 */
export function resolveOllamaHost(setting: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const raw = (setting?.trim() || env.OLLAMA_HOST?.trim() || '').replace(/\/+$/, '');
  if (!raw) return DEFAULT_OLLAMA_HOST;
  const schemeMatch = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(raw);
  const scheme = schemeMatch ? schemeMatch[1]!.toLowerCase() : 'http';
  const rest = schemeMatch ? schemeMatch[2]! : raw;
  const defaultPort = !schemeMatch ? '11434' : scheme === 'https' ? '443' : scheme === 'http' ? '80' : '11434';
  const slash = rest.indexOf('/');
  const hostPort = slash === -1 ? rest : rest.slice(0, slash);
  const pathPart = slash === -1 ? '' : rest.slice(slash);
  let host = hostPort;
  let port = defaultPort;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPort);
  if (bracketed) {
    host = `[${bracketed[1]}]`;
    port = bracketed[2] ?? defaultPort;
  } else if (/^[^:]*:\d*$/.test(hostPort)) {
    const [h, p] = hostPort.split(':');
    host = h || '127.0.0.1';
    port = p || defaultPort;
  }
  if (!host) host = '127.0.0.1';
  // A server bound to every interface is reached through loopback.
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '[::]') host = '[::1]';
  const portNumber = Number(port);
  if (!Number.isInteger(portNumber) || portNumber < 0 || portNumber > 65535) port = defaultPort;
  return `${scheme}://${host}:${port}${pathPart}`;
}
