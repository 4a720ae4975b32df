// WebSocket mode on node:http, with no dependency: the upgrade handshake and the frames of RFC 6455
// that a client of the spec sends (text, possibly fragmented; ping; close). Messages are JSON objects.
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const MAX_MESSAGE = 16 * 1024 * 1024;

/** One open connection: its messages in, JSON out. */
export class WebSocketConnection {
  private buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private closed = false;

  constructor(
    private readonly socket: Duplex,
    private readonly onMessage: (text: string) => void,
    private readonly onClose: () => void,
  ) {
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("close", () => this.close());
    socket.on("error", () => this.close());
  }

  /** Send `value` as one text message. */
  send(value: unknown): void {
    if (this.closed) return;
    this.frame(0x1, Buffer.from(JSON.stringify(value), "utf8"));
  }

  get open(): boolean {
    return !this.closed;
  }

  private frame(opcode: number, payload: Buffer): void {
    const length = payload.length;
    const header =
      length < 126
        ? Buffer.from([0x80 | opcode, length])
        : length < 65536
          ? Buffer.from([0x80 | opcode, 126, length >> 8, length & 0xff])
          : Buffer.concat([
              Buffer.from([0x80 | opcode, 127]),
              bigEndian64(length),
            ]);
    this.socket.write(Buffer.concat([header, payload]));
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (this.buffer.length < 2) return;
      const fin = (this.buffer[0]! & 0x80) !== 0;
      const opcode = this.buffer[0]! & 0x0f;
      const masked = (this.buffer[1]! & 0x80) !== 0;
      let length = this.buffer[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffer.length < 4) return;
        length = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffer.length < 10) return;
        length = Number(this.buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (!masked || length > MAX_MESSAGE) return this.fail(1002); // clients must mask; bound a message
      if (this.buffer.length < offset + 4 + length) return;
      const mask = this.buffer.subarray(offset, offset + 4);
      const payload = Buffer.from(
        this.buffer.subarray(offset + 4, offset + 4 + length),
      );
      for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
      this.buffer = this.buffer.subarray(offset + 4 + length);
      if (opcode === 0x8) return this.fail(1000);
      if (opcode === 0x9) this.frame(0xa, payload);
      if (opcode === 0x1 || opcode === 0x0) {
        this.fragments.push(payload);
        if (fin) {
          const text = Buffer.concat(this.fragments).toString("utf8");
          this.fragments = [];
          this.onMessage(text);
        }
      }
    }
  }

  /** Close with `code` and drop the connection. */
  private fail(code: number): void {
    if (this.closed) return;
    this.frame(0x8, Buffer.from([code >> 8, code & 0xff]));
    this.socket.end();
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
  }
}

/** Complete the upgrade of `req` on `socket`: the 101 answer. */
export function acceptUpgrade(req: IncomingMessage, socket: Duplex): boolean {
  const key = req.headers["sec-websocket-key"];
  if (
    typeof key !== "string" ||
    req.headers.upgrade?.toLowerCase() !== "websocket"
  )
    return false;
  const accept = createHash("sha1")
    .update(key + GUID)
    .digest("base64");
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
  );
  return true;
}

/** Refuse an upgrade with an HTTP answer carrying the spec's error object. */
export function refuseUpgrade(
  socket: Duplex,
  status: number,
  reason: string,
  body: unknown,
): void {
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

function bigEndian64(value: number): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeBigUInt64BE(BigInt(value));
  return buffer;
}
