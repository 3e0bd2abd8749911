//! Point-to-point connections: what sends and receives (and alltoall, gather and
//! scatter, which NCCL builds from them) connect on their own, peer by peer, beside
//! the ring: the transport init's search gives the pair, NCCL's line for each
//! connection, an SHM segment for an SHM one; and the link's cost for the work.

use super::comm::{Comm, Failure};
use super::{lines, version};
use crate::log;
use crate::topo::{self, Allowed, Transport};

impl Comm {
    /// The transport to rank `r`, as init's search would pick it for a pair.
    fn pair_transport(&self, r: usize) -> Transport {
        let me = self.rank as usize;
        topo::transport(
            self.topo,
            Allowed::from_env(),
            self.nvml_of(me),
            self.nvml_of(r),
            self.same_host_pair(me, r),
        )
    }

    /// Latency (ns) and bandwidth (bytes per ns) of point-to-point traffic to rank
    /// `r`: the link its transport takes.
    pub fn peer_link(&self, r: usize) -> (f64, f64) {
        let t = self.pair_transport(r);
        let (latency, bandwidth) = topo::link(self.topo, t);
        let factor = if t == Transport::P2p {
            topo::link_factor(self.nvml_of(self.rank as usize), self.nvml_of(r))
        } else {
            1.0
        };
        (latency, bandwidth / factor)
    }

    /// Whether any of `peers` (other than this rank) is not connected yet.
    pub fn needs_peers(&self, peers: &[u32]) -> bool {
        let connected = self.connected.lock().unwrap();
        peers
            .iter()
            .any(|&p| p != self.rank && p < self.nranks && !connected.peers.contains(&p))
    }

    /// Connects this rank to each of `peers` not yet connected for point-to-point
    /// work (NCCL's connection index 1): a line per connection as NCCL logs it (the
    /// sender's; over the network also the receiver's), an SHM segment for an SHM
    /// one.
    pub fn connect_peers(&self, peers: &[u32]) -> Result<(), Failure> {
        let mut connected = self.connected.lock().unwrap();
        let me = self.rank as usize;
        let v = version();
        let cumem = self.plan().cumem;
        let name = |r: usize| self.peer_name(r);
        for &peer in peers {
            let r = peer as usize;
            if r == me || r >= self.nranks as usize || connected.peers.contains(&peer) {
                continue;
            }
            let t = self.pair_transport(r);
            if t == Transport::Shm {
                match self.create_shm_segments(1, r) {
                    Ok(segments) => connected.segments.extend(segments),
                    Err(e) => {
                        self.leave();
                        return Err(e);
                    }
                }
            }
            let line = lines::connection(v, 0, 1, &name(me), &name(r), t, cumem, true);
            log::info(log::INIT | log::P2P, self.device, &line);
            if t == Transport::Net {
                let line = lines::connection(v, 0, 1, &name(r), &name(me), t, cumem, false);
                log::info(log::INIT | log::NET, self.device, &line);
            }
            connected.peers.insert(peer);
        }
        Ok(())
    }
}
