//! Rank 0's side of the rendezvous: accept one connection per rank until all have
//! arrived or the deadline passes, refuse at once what does not belong to this run
//! (another world size or config, a rank taken twice), and when ranks are missing,
//! name them, the ranks that came, and the nodes of the job that sent nobody.

use anyhow::{anyhow, Result};

use super::launcher::RankLayout;
use super::remote::Joined;
use super::rendezvous::{self, Listener};
use super::wire::{self, Down, Hello};

/// Accepts every other rank before the deadline. A hello that does not fit the run
/// (another world size or config, a rank taken twice) stops it at once; a deadline
/// with ranks missing names them and the nodes they were expected on.
pub fn gather(
    listener: &Listener,
    layout: &RankLayout,
    mine: &Hello,
    deadline: std::time::Instant,
    own: Joined,
) -> Result<Vec<Joined>> {
    let world = layout.world_size as usize;
    let mut slots: Vec<Option<Joined>> = (0..world).map(|_| None).collect();
    slots[0] = Some(own);
    let fail = |slots: &mut Vec<Option<Joined>>, message: String| -> anyhow::Error {
        for j in slots.iter_mut().skip(1).flatten() {
            let _ = wire::send(
                &mut j.writer,
                &Down::Done {
                    code: 2,
                    message: Some(format!("rank 0 stopped the run: {message}")),
                },
            );
        }
        anyhow!(message)
    };
    while slots.iter().any(Option::is_none) {
        let Some(mut stream) = listener.accept(deadline) else {
            let message = missing_ranks(&slots, layout, listener);
            return Err(fail(&mut slots, message));
        };
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let (hello, reader) = match rendezvous::read_hello(&stream, deadline) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("rank 0: ignored a connection from {peer}: {e:#}");
                continue;
            }
        };
        if let Err(reason) = fits(&hello, mine, &slots) {
            let _ = rendezvous::answer(
                &mut stream,
                &Down::Refused {
                    reason: reason.clone(),
                },
            );
            let message = format!("rank {} from {} ({peer}): {reason}", hello.rank, hello.host);
            return Err(fail(&mut slots, message));
        }
        if let Err(e) = rendezvous::answer(&mut stream, &Down::Welcome) {
            let message = format!(
                "rank {} from {} ({peer}) left right after its hello: {e:#}",
                hello.rank, hello.host
            );
            return Err(fail(&mut slots, message));
        }
        rendezvous::keepalive(&stream);
        let rank = hello.rank as usize;
        slots[rank] = Some(Joined {
            hello,
            reader: Box::new(reader),
            writer: Box::new(stream),
        });
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Whether a hello belongs to this run.
fn fits(hello: &Hello, mine: &Hello, slots: &[Option<Joined>]) -> std::result::Result<(), String> {
    if hello.world_size != mine.world_size {
        return Err(format!(
            "it was started with a world size of {}, rank 0 with {}",
            hello.world_size, mine.world_size
        ));
    }
    if hello.rank == 0 || hello.rank >= mine.world_size {
        return Err(format!(
            "rank {} is not a rank another process can take (0 is this one; the world size is {})",
            hello.rank, mine.world_size
        ));
    }
    if let Some(Some(other)) = slots.get(hello.rank as usize) {
        return Err(format!(
            "rank {} already joined from {} (pid {}): two processes have the same rank; check the launcher's variables",
            hello.rank, other.hello.host, other.hello.pid
        ));
    }
    if hello.config != mine.config || hello.config_env != mine.config_env {
        return Err(format!(
            "it runs config '{}' {:?}, rank 0 runs '{}' {:?}: every rank must be started with the same --config/--transports",
            hello.config, hello.config_env, mine.config, mine.config_env
        ));
    }
    if hello.job != mine.job {
        return Err(format!(
            "it belongs to job {}, rank 0 to job {}",
            hello.job.as_deref().unwrap_or("(none)"),
            mine.job.as_deref().unwrap_or("(none)")
        ));
    }
    Ok(())
}

/// The error of a rendezvous that timed out: who is missing, who came, and which
/// nodes of the job have no rank at all.
fn missing_ranks(slots: &[Option<Joined>], layout: &RankLayout, listener: &Listener) -> String {
    let missing: Vec<u32> = (0..slots.len() as u32)
        .filter(|&r| slots[r as usize].is_none())
        .collect();
    let present: Vec<&Hello> = slots.iter().flatten().map(|j| &j.hello).collect();
    let joined: Vec<String> = present
        .iter()
        .map(|h| format!("{} on {}", h.rank, h.host))
        .collect();
    let mut message = format!(
        "rank(s) {} of {} did not join rank 0 at {} before the deadline; joined: {}",
        crate::units::ranges(&missing),
        slots.len(),
        listener.address,
        joined.join(", ")
    );
    let silent: Vec<&String> = layout
        .nodes
        .iter()
        .filter(|n| !present.iter().any(|h| same_host(&h.host, n)))
        .collect();
    if !silent.is_empty() {
        let names: Vec<&str> = silent.iter().map(|s| s.as_str()).collect();
        message.push_str(&format!(
            "; node(s) of the job with no rank joined: {}",
            names.join(", ")
        ));
    }
    message.push_str(
        ". Check that every rank started, that its launcher variables give the same world size, and that it can reach this address (MASTER_ADDR/MASTER_PORT, --rendezvous, firewall)",
    );
    message
}

/// `node01` and `node01.cluster.local` are the same node.
fn same_host(a: &str, b: &str) -> bool {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_string();
    short(a) == short(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_full_host_names_are_one_node() {
        assert!(same_host("node01", "node01.cluster.local"));
        assert!(!same_host("node01", "node010"));
    }
}
