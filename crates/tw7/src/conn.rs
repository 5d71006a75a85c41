//! The client side of a tw7 (0.7 protocol) connection (src/engine/shared/
//! network_conn.cpp `CNetConnection`, network_client.cpp), sans-I/O: the
//! token handshake, acks, resends of vital chunks, keep-alives, close and
//! timeouts. Datagrams and `now` in, datagrams out; no socket, no clock.
//!
//! ```text
//! Connection::new(my_token, now)  state Token: poll_transmit -> TOKEN request
//!   (TKEN, header token NONE, our token + padding to 512 bytes), every 0.5 s
//! handle(TOKEN response)           state Connect: CONNECT with our token, every 0.5 s
//! handle(ACCEPT)                   state Online: queue_chunk / poll_transmit
//! handle(data packet)              -> Incoming::Chunks: the caller walks
//!                                     them with `Chunks` and asks
//!                                     `accept_vital(seq)` for each vital one
//! handle_timeout(now)              resend, keep-alive, timeout
//! close(reason)                    one CLOSE, then state Closed
//! ```
//!
//! Every packet from the server carries our token in its header; one that
//! does not is dropped with [`Tw7Error::WrongToken`]. The server's token
//! (from its TOKEN answer) goes in every packet we send.
//!
//! Timers, from `CNetConnection::Update`: token request and connect are
//! resent every 500 ms; no answer to the token request in 5 s, or nothing
//! received for 10 s in any other state, closes the connection; the oldest
//! unacknowledged vital chunk is resent once it is 1 s old and the
//! connection fails if one stays unacknowledged for 10 s; queued chunks
//! are flushed by `poll_transmit` right away; a keep-alive goes out after
//! 1 s without sending. A packet with the resend flag makes us resend all
//! unacknowledged vital chunks.
//!
//! What it does not do: look inside chunks (that is [`crate::client`]),
//! compress control packets (the engine never does), or allocate in steady
//! state: datagrams are built in the caller's buffer, chunks wait in one
//! reused buffer, and the resend queue keeps its entries' allocations.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::huffman::Huffman;
use crate::packet::{
    seq_in_backroom, ChunkHeader, PacketHeader, CHUNK_RESEND, CHUNK_VITAL, CTRL_ACCEPT, CTRL_CLOSE,
    CTRL_CONNECT, CTRL_KEEPALIVE, CTRL_TOKEN, FLAG_COMPRESSION, FLAG_CONTROL, FLAG_RESEND,
    MAX_CHUNK_HEADER_SIZE, MAX_PACKET_SIZE, MAX_PAYLOAD, MAX_SEQUENCE, PACKET_HEADER_SIZE,
    TOKEN_NONE, TOKEN_REQUEST_DATA_SIZE,
};
use crate::Tw7Error;

/// Resend the token request or connect this often.
pub const HANDSHAKE_RESEND: Duration = Duration::from_millis(500);
/// Give up on the token request after this long.
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(5);
/// Close after receiving nothing for this long.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Resend the oldest unacknowledged vital chunk after this long.
pub const RESEND_AFTER: Duration = Duration::from_secs(1);
/// Send a keep-alive after sending nothing for this long.
pub const KEEPALIVE_AFTER: Duration = Duration::from_secs(1);
/// Bytes of unacknowledged vital chunks kept (`NET_CONN_BUFFERSIZE`).
pub const RESEND_BUFFER: usize = 32 * 1024;
/// The longest close reason kept (the engine's 128-byte buffer).
pub const MAX_REASON: usize = 127;

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Asking for the server's token.
    Token,
    /// Sending connect, waiting for accept.
    Connect,
    /// Accepted; chunks flow.
    Online,
    /// Closed by either side or by a timeout; see [`Connection::close_reason`].
    Closed,
}

/// What one datagram was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// Nothing for the caller (a keep-alive, a token answer, a duplicate).
    Nothing,
    /// The server accepted the connection: now Online.
    Accepted,
    /// The server closed the connection (reason in `close_reason`).
    Closed,
    /// A data packet: `num_chunks` chunks are in the payload buffer the
    /// caller passed.
    Chunks {
        /// Chunks in the payload.
        num_chunks: u8,
    },
}

struct Resend {
    sequence: u16,
    first_send: Instant,
    last_send: Instant,
    data: Vec<u8>,
}

/// A connection to one server.
pub struct Connection {
    state: ConnState,
    my_token: u32,
    peer_token: u32,
    /// Our last vital sequence.
    sequence: u16,
    /// The last vital sequence received in order.
    ack: u16,
    /// The server's last ack of our sequences.
    peer_ack: u16,
    /// Unacknowledged vital chunks, oldest first.
    resend: VecDeque<Resend>,
    resend_bytes: usize,
    /// Emptied entries, kept for their allocations.
    spare: Vec<Vec<u8>>,
    /// Chunks waiting for the next packet.
    construct: Vec<u8>,
    construct_chunks: u8,
    /// Packet flags for the next packet (resend request).
    construct_flags: u8,
    /// Full packets' chunk bytes waiting behind `construct`.
    overflow: VecDeque<(Vec<u8>, u8)>,
    /// A control message to send next (message byte).
    pending_control: Option<u8>,
    close_reason: String,
    /// Send a CLOSE once (after `close`).
    send_close: bool,
    started: Instant,
    last_send: Instant,
    last_recv: Instant,
    /// Compression scratch.
    scratch: Vec<u8>,
}

impl Connection {
    /// A connection that will ask for the server's token, identifying
    /// itself by `my_token` (the server echoes it in every packet).
    pub fn new(my_token: u32, now: Instant) -> Connection {
        Connection {
            state: ConnState::Token,
            my_token,
            peer_token: TOKEN_NONE,
            sequence: 0,
            ack: 0,
            peer_ack: 0,
            resend: VecDeque::new(),
            resend_bytes: 0,
            spare: Vec::new(),
            construct: Vec::with_capacity(MAX_PAYLOAD),
            construct_chunks: 0,
            construct_flags: 0,
            overflow: VecDeque::new(),
            pending_control: Some(CTRL_TOKEN),
            close_reason: String::new(),
            send_close: false,
            started: now,
            last_send: now,
            last_recv: now,
            scratch: Vec::with_capacity(MAX_PACKET_SIZE),
        }
    }

    /// The connection's state.
    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Our token.
    pub fn my_token(&self) -> u32 {
        self.my_token
    }

    /// The server's token (`TOKEN_NONE` before its answer).
    pub fn peer_token(&self) -> u32 {
        self.peer_token
    }

    /// Why it closed ("" while open).
    pub fn close_reason(&self) -> &str {
        &self.close_reason
    }

    /// Unacknowledged vital chunks.
    pub fn unacked(&self) -> usize {
        self.resend.len()
    }

    /// The last vital sequence received in order.
    pub fn ack(&self) -> u16 {
        self.ack
    }

    fn fail(&mut self, reason: &str) {
        if self.state != ConnState::Closed {
            self.state = ConnState::Closed;
            self.close_reason = reason.to_string();
        }
    }

    /// Close from our side with `reason`: one CLOSE goes out with the next
    /// `poll_transmit`.
    pub fn close(&mut self, reason: &str) {
        if self.state == ConnState::Closed {
            return;
        }
        let mut end = reason.len().min(MAX_REASON);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        self.fail(&reason[..end]);
        self.send_close = true;
    }

    /// Process one datagram from the server. For `Incoming::Chunks`, the
    /// decompressed payload is in `payload` (cleared first).
    pub fn handle(
        &mut self,
        now: Instant,
        datagram: &[u8],
        payload: &mut Vec<u8>,
    ) -> Result<Incoming, Tw7Error> {
        payload.clear();
        if self.state == ConnState::Closed {
            return Err(Tw7Error::State("connection closed"));
        }
        let h = PacketHeader::decode(datagram)?;
        if h.token != self.my_token {
            return Err(Tw7Error::WrongToken {
                got: h.token,
                expected: self.my_token,
            });
        }
        let ack = h.ack % MAX_SEQUENCE;
        // The ack must lie between the last one and our sequence
        // (`CNetConnection::Feed`); else it is stale or forged.
        let valid = if self.sequence >= self.peer_ack {
            ack >= self.peer_ack && ack <= self.sequence
        } else {
            ack >= self.peer_ack || ack <= self.sequence
        };
        if !valid {
            return Err(Tw7Error::Malformed("ack outside the sent range"));
        }
        self.peer_ack = ack;
        let body = &datagram[PACKET_HEADER_SIZE..];
        if h.flags & FLAG_RESEND != 0 && self.state == ConnState::Online {
            self.resend_all(now);
        }
        if h.flags & FLAG_CONTROL != 0 {
            let (&msg, extra) = body
                .split_first()
                .ok_or(Tw7Error::Truncated("control message"))?;
            let r = self.handle_control(now, msg, extra)?;
            if self.state == ConnState::Online {
                self.ack_chunks(ack);
            }
            return Ok(r);
        }
        if h.flags & FLAG_COMPRESSION != 0 {
            Huffman::get().decompress(body, payload, MAX_PAYLOAD)?;
        } else {
            payload.extend_from_slice(body);
        }
        match self.state {
            ConnState::Online => {
                self.last_recv = now;
                self.ack_chunks(ack);
                Ok(Incoming::Chunks {
                    num_chunks: h.num_chunks,
                })
            }
            // Data before accept: the engine's client drops it too (its
            // unpacker only runs for online connections).
            _ => Ok(Incoming::Nothing),
        }
    }

    fn handle_control(
        &mut self,
        now: Instant,
        msg: u8,
        extra: &[u8],
    ) -> Result<Incoming, Tw7Error> {
        match msg {
            CTRL_CLOSE => {
                let text = extra.split(|&b| b == 0).next().unwrap_or(&[]);
                let text = &text[..text.len().min(MAX_REASON)];
                let reason: String = String::from_utf8_lossy(text)
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                self.state = ConnState::Closed;
                self.close_reason = reason;
                Ok(Incoming::Closed)
            }
            CTRL_TOKEN => {
                let t = extra
                    .get(..4)
                    .ok_or(Tw7Error::Truncated("token response"))?;
                self.peer_token = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
                if self.state == ConnState::Token {
                    self.state = ConnState::Connect;
                    self.last_recv = now;
                    self.pending_control = Some(CTRL_CONNECT);
                }
                Ok(Incoming::Nothing)
            }
            CTRL_ACCEPT => {
                if self.state == ConnState::Connect {
                    self.state = ConnState::Online;
                    self.last_recv = now;
                    self.pending_control = None;
                    return Ok(Incoming::Accepted);
                }
                self.last_recv = now;
                Ok(Incoming::Nothing)
            }
            CTRL_KEEPALIVE | CTRL_CONNECT => {
                if self.state == ConnState::Online {
                    self.last_recv = now;
                }
                Ok(Incoming::Nothing)
            }
            _ => Err(Tw7Error::Malformed("unknown control message")),
        }
    }

    /// For a vital chunk with `sequence`: true if it is the next in order
    /// (deliver it; it is now acknowledged), false if it is a duplicate or
    /// out of order (drop it; a gap makes us ask for a resend).
    pub fn accept_vital(&mut self, sequence: u16) -> bool {
        let sequence = sequence % MAX_SEQUENCE;
        if sequence == (self.ack + 1) % MAX_SEQUENCE {
            self.ack = sequence;
            return true;
        }
        if !seq_in_backroom(sequence, self.ack) {
            self.construct_flags |= FLAG_RESEND;
        }
        false
    }

    fn ack_chunks(&mut self, ack: u16) {
        while let Some(r) = self.resend.front() {
            if !seq_in_backroom(r.sequence, ack) {
                break;
            }
            if let Some(r) = self.resend.pop_front() {
                self.resend_bytes -= r.data.len();
                self.spare.push(r.data);
            }
        }
    }

    fn push_chunk(&mut self, flags: u8, sequence: u16, data: &[u8]) {
        if self.construct.len() + data.len() + MAX_CHUNK_HEADER_SIZE > MAX_PAYLOAD
            || self.construct_chunks == u8::MAX
        {
            let full = std::mem::replace(
                &mut self.construct,
                self.spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(MAX_PAYLOAD)),
            );
            self.construct.clear();
            self.overflow.push_back((full, self.construct_chunks));
            self.construct_chunks = 0;
        }
        ChunkHeader {
            flags,
            size: data.len() as u16,
            sequence,
        }
        .encode(&mut self.construct);
        self.construct.extend_from_slice(data);
        self.construct_chunks += 1;
    }

    /// Queue one chunk for the next packet; a vital one is kept until the
    /// server acknowledges it. Only while Online.
    pub fn queue_chunk(&mut self, now: Instant, vital: bool, data: &[u8]) -> Result<(), Tw7Error> {
        if self.state != ConnState::Online {
            return Err(Tw7Error::State("connection not online"));
        }
        let limit = MAX_PAYLOAD - MAX_CHUNK_HEADER_SIZE - 1;
        if data.len() > limit {
            return Err(Tw7Error::TooLarge {
                what: "chunk",
                size: data.len(),
                limit,
            });
        }
        if !vital {
            self.push_chunk(0, 0, data);
            return Ok(());
        }
        if self.resend_bytes + data.len() > RESEND_BUFFER {
            self.close("too weak connection (out of buffer)");
            return Err(Tw7Error::State("resend buffer full"));
        }
        self.sequence = (self.sequence + 1) % MAX_SEQUENCE;
        let seq = self.sequence;
        self.push_chunk(CHUNK_VITAL, seq, data);
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(data);
        self.resend_bytes += buf.len();
        self.resend.push_back(Resend {
            sequence: seq,
            first_send: now,
            last_send: now,
            data: buf,
        });
        Ok(())
    }

    fn resend_all(&mut self, now: Instant) {
        for i in 0..self.resend.len() {
            self.resend_one(now, i);
        }
    }

    fn resend_one(&mut self, now: Instant, i: usize) {
        let (seq, data) = {
            let r = &mut self.resend[i];
            r.last_send = now;
            (r.sequence, std::mem::take(&mut r.data))
        };
        self.push_chunk(CHUNK_VITAL | CHUNK_RESEND, seq, &data);
        self.resend[i].data = data;
    }

    /// Timers: handshake resends, chunk resends, keep-alive, timeouts.
    pub fn handle_timeout(&mut self, now: Instant) {
        let since = |t: Instant| now.saturating_duration_since(t);
        match self.state {
            ConnState::Closed => {}
            ConnState::Token => {
                if since(self.started) > TOKEN_TIMEOUT {
                    self.fail("Unable to connect to the server");
                } else if since(self.last_send) > HANDSHAKE_RESEND {
                    self.pending_control = Some(CTRL_TOKEN);
                }
            }
            ConnState::Connect => {
                if since(self.last_recv) > TIMEOUT {
                    self.fail("Timeout");
                } else if since(self.last_send) > HANDSHAKE_RESEND {
                    self.pending_control = Some(CTRL_CONNECT);
                }
            }
            ConnState::Online => {
                if since(self.last_recv) > TIMEOUT {
                    self.fail("Timeout");
                    return;
                }
                if let Some(r) = self.resend.front() {
                    if since(r.first_send) > TIMEOUT {
                        self.fail("Too weak connection (not acked for 10 seconds)");
                        return;
                    }
                    if since(r.last_send) > RESEND_AFTER {
                        self.resend_one(now, 0);
                    }
                }
                if since(self.last_send) > KEEPALIVE_AFTER
                    && self.construct_chunks == 0
                    && self.overflow.is_empty()
                {
                    self.pending_control = Some(CTRL_KEEPALIVE);
                }
            }
        }
    }

    /// When `handle_timeout` next has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            ConnState::Closed => None,
            ConnState::Token | ConnState::Connect => Some(self.last_send + HANDSHAKE_RESEND),
            ConnState::Online => {
                let mut t = (self.last_send + KEEPALIVE_AFTER).min(self.last_recv + TIMEOUT);
                if let Some(r) = self.resend.front() {
                    t = t.min(r.last_send + RESEND_AFTER);
                }
                Some(t)
            }
        }
    }

    /// Whether `poll_transmit` has something to send.
    pub fn has_transmit(&self) -> bool {
        self.pending_control.is_some()
            || self.send_close
            || (self.state == ConnState::Online
                && (self.construct_chunks > 0
                    || !self.overflow.is_empty()
                    || self.construct_flags != 0))
    }

    /// Write the next datagram to send into `buf` (at least
    /// [`MAX_PACKET_SIZE`] bytes) and return its length, or `None` if there
    /// is nothing to send.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if buf.len() < MAX_PACKET_SIZE {
            return None;
        }
        if self.send_close {
            self.send_close = false;
            let reason = self.close_reason.as_bytes();
            let mut n = self.control(buf, CTRL_CLOSE, reason);
            buf[n] = 0;
            n += 1;
            return Some(n);
        }
        if self.state == ConnState::Closed {
            return None;
        }
        if let Some(msg) = self.pending_control.take() {
            self.last_send = now;
            let n = match msg {
                CTRL_TOKEN | CTRL_CONNECT => {
                    // Our token, zero-padded to 512 bytes.
                    let mut extra = [0u8; TOKEN_REQUEST_DATA_SIZE];
                    extra[..4].copy_from_slice(&self.my_token.to_be_bytes());
                    self.control(buf, msg, &extra)
                }
                _ => self.control(buf, msg, &[]),
            };
            return Some(n);
        }
        if self.state != ConnState::Online {
            return None;
        }
        let (chunks, num) = if let Some((data, num)) = self.overflow.pop_front() {
            (data, num)
        } else if self.construct_chunks > 0 || self.construct_flags != 0 {
            let spare = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(MAX_PAYLOAD));
            let data = std::mem::replace(&mut self.construct, spare);
            self.construct.clear();
            let num = std::mem::take(&mut self.construct_chunks);
            (data, num)
        } else {
            return None;
        };
        let mut flags = std::mem::take(&mut self.construct_flags);
        let compressed = Huffman::get()
            .compress(&chunks, &mut self.scratch, MAX_PAYLOAD)
            .is_ok()
            && !self.scratch.is_empty()
            && self.scratch.len() < chunks.len();
        let body: &[u8] = if compressed {
            flags |= FLAG_COMPRESSION;
            &self.scratch
        } else {
            &chunks
        };
        let h = PacketHeader {
            flags,
            ack: self.ack,
            num_chunks: num,
            token: self.peer_token,
        };
        buf[..PACKET_HEADER_SIZE].copy_from_slice(&h.encode());
        let n = PACKET_HEADER_SIZE + body.len();
        buf[PACKET_HEADER_SIZE..n].copy_from_slice(body);
        self.spare.push(chunks);
        self.last_send = now;
        Some(n)
    }

    fn control(&self, buf: &mut [u8], msg: u8, extra: &[u8]) -> usize {
        let ack = if msg == CTRL_TOKEN || msg == CTRL_CONNECT {
            0
        } else {
            self.ack
        };
        let h = PacketHeader {
            flags: FLAG_CONTROL,
            ack,
            num_chunks: 0,
            token: self.peer_token,
        };
        buf[..PACKET_HEADER_SIZE].copy_from_slice(&h.encode());
        buf[PACKET_HEADER_SIZE] = msg;
        let n = PACKET_HEADER_SIZE + 1 + extra.len();
        buf[PACKET_HEADER_SIZE + 1..n].copy_from_slice(extra);
        n
    }
}

#[cfg(test)]
mod tests;
