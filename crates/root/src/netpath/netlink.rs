//! The route netlink socket: opened in the root namespace or inside a
//! named one, every wait for an answer bounded by a receive timeout, one
//! request sent and its acknowledgement, answer or dump read back. The
//! kernel's refusal comes back as its errno.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Duration;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use rustix::net::sockopt::{set_socket_timeout, Timeout};
use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

/// Room for one datagram of the kernel's answers (a dump comes in parts of
/// at most 32 KiB).
const RECV_BUF: usize = 64 * 1024;

/// How a request is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Create; fail if it exists (`NLM_F_CREATE | NLM_F_EXCL`).
    Create,
    /// Change, delete or look up one object.
    Change,
    /// Read every object (`NLM_F_DUMP`).
    Dump,
}

impl Mode {
    fn flags(self) -> u16 {
        NLM_F_REQUEST
            | match self {
                Mode::Create => NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
                Mode::Change => NLM_F_ACK,
                Mode::Dump => NLM_F_DUMP,
            }
    }
}

/// A `NETLINK_ROUTE` socket of one network namespace.
pub(crate) struct Netlink {
    socket: Socket,
    seq: u32,
    timeout: Duration,
}

impl Netlink {
    /// A socket in the calling thread's namespace; each wait for the
    /// kernel's answer gives up after `timeout`.
    pub(crate) fn open(timeout: Duration) -> io::Result<Netlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        set_socket_timeout(&socket, Timeout::Recv, Some(timeout))?;
        set_socket_timeout(&socket, Timeout::Send, Some(timeout))?;
        Ok(Netlink {
            socket,
            seq: 0,
            timeout,
        })
    }

    /// A socket inside the namespace bound at `netns` (a /run/netns file),
    /// opened by a short-lived thread that enters it: a socket keeps the
    /// namespace it was created in, and the caller's thread stays where it
    /// is.
    pub(crate) fn open_in(netns: &Path, timeout: Duration) -> io::Result<Netlink> {
        let file = File::open(netns)?;
        std::thread::scope(|s| {
            s.spawn(|| {
                move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))?;
                Netlink::open(timeout)
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
        })
    }

    /// Sends `msg` and reads the answers up to the acknowledgement (or the
    /// end of the dump): none for a change, one for a lookup, all for a
    /// dump. A refusal is the kernel's errno as an [`io::Error`]; no answer
    /// within the timeout is [`io::ErrorKind::TimedOut`].
    pub(crate) fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        mode: Mode,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = mode.flags();
        header.sequence_number = self.seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        packet.finalize();
        let mut buf = vec![0; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.socket.send(&buf, 0)?;

        let mut answers = vec![];
        let mut rx = vec![0u8; RECV_BUF];
        loop {
            let n = match self.socket.recv(&mut &mut rx[..], libc::MSG_TRUNC) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no answer from the kernel within {:?}", self.timeout),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n > rx.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("an answer of {n} bytes does not fit {} bytes", rx.len()),
                ));
            }
            if let Some(done) = read_datagram(&rx[..n], self.seq, &mut answers)? {
                return done.map(|()| answers);
            }
        }
    }
}

/// Reads the messages of one datagram answering request `seq` into
/// `answers`; `Some` once the answer is complete (`Ok`) or refused (the
/// errno).
fn read_datagram(
    mut data: &[u8],
    seq: u32,
    answers: &mut Vec<RouteNetlinkMessage>,
) -> io::Result<Option<io::Result<()>>> {
    while !data.is_empty() {
        let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(data)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let len = (msg.header.length as usize + 3) & !3;
        if msg.header.length == 0 {
            break;
        }
        data = data.get(len..).unwrap_or_default();
        if msg.header.sequence_number != seq {
            continue;
        }
        match msg.payload {
            NetlinkPayload::Error(e) => {
                return Ok(Some(match e.code {
                    Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
                    None => Ok(()),
                }))
            }
            NetlinkPayload::Done(_) => return Ok(Some(Ok(()))),
            NetlinkPayload::InnerMessage(m) => answers.push(m),
            _ => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::ErrorMessage;
    use netlink_packet_route::link::LinkMessage;
    use std::num::NonZeroI32;

    fn datagram(seq: u32, payloads: Vec<NetlinkPayload<RouteNetlinkMessage>>) -> Vec<u8> {
        let mut out = vec![];
        for p in payloads {
            let mut header = NetlinkHeader::default();
            header.sequence_number = seq;
            let mut m = NetlinkMessage::new(header, p);
            m.finalize();
            let mut b = vec![0; m.buffer_len()];
            m.serialize(&mut b);
            out.extend(b);
        }
        out
    }

    #[test]
    fn a_refusal_is_the_kernels_errno() {
        let mut e = ErrorMessage::default();
        e.code = NonZeroI32::new(-libc::ENODEV);
        let d = datagram(5, vec![NetlinkPayload::Error(e)]);
        let mut answers = vec![];
        let r = read_datagram(&d, 5, &mut answers).unwrap().unwrap();
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::ENODEV));
    }

    #[test]
    fn answers_are_kept_until_the_ack_and_other_requests_skipped() {
        let link = RouteNetlinkMessage::NewLink(LinkMessage::default());
        let ack = NetlinkPayload::Error(ErrorMessage::default());
        let d = datagram(3, vec![NetlinkPayload::InnerMessage(link.clone())]);
        let mut answers = vec![];
        assert!(read_datagram(&d, 3, &mut answers).unwrap().is_none());
        let old = datagram(2, vec![NetlinkPayload::InnerMessage(link.clone())]);
        assert!(read_datagram(&old, 3, &mut answers).unwrap().is_none());
        let d = datagram(3, vec![ack]);
        assert!(read_datagram(&d, 3, &mut answers).unwrap().unwrap().is_ok());
        assert_eq!(answers, [link]);
    }
}
