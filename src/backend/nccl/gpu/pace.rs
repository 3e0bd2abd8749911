//! How often a GPU rank records a timing event: the calibration of a size (16
//! operations with an event after each, 16 with events at the ends) and the stride
//! it chooses (the module comment of `gpu` says why and how; `GpuComm::measure_pace`
//! measures).

/// What a size's calibration measured, per all-reduce, in nanoseconds, and the
/// stride it chose.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub host_with_event_ns: f64,
    pub host_without_ns: f64,
    pub gpu_ns: f64,
    pub stride: usize,
}

/// All-reduces per calibration batch.
pub(super) const CALIBRATION: usize = 16;
/// What CUDA events resolve, in nanoseconds: "around 0.5 microseconds"
/// (cudaEventElapsedTime).
pub const EVENT_GRAIN_NS: f64 = 500.0;
/// The largest share of a step's time the event grain may be, 0.25 %: a step's time
/// off by at most half a grain, and a round's median moving with the grain by
/// 0.07 % (the standard deviation of a rounding, grain / sqrt(12)), a thirtieth of
/// the default 2 % threshold. Rounds are compared to a percent: at a 2 % share a
/// 9.5 us all-reduce was timed 3 at a time and read in steps of 1.8 %, so that two
/// process groups 1 % apart could read alike and two alike a step apart.
const GRAIN_SHARE: f64 = 0.0025;
/// Sizes from here keep an event per all-reduce without calibration: an
/// all-reduce of 1 GiB takes any GPU of today over half a millisecond (1.8 TB/s of
/// bus bandwidth on two GPUs), so the event grain is under 0.1 % of it and the host
/// is far ahead. A size, not a measured time: every rank must run the same
/// all-reduces, and a time near a bound could send two ranks different ways. The
/// calibration costs 34 all-reduces a size in every process group, which the
/// largest sizes need not spend.
pub(super) const CALIBRATE_BELOW: usize = 1 << 30;
/// The most all-reduces per event a calibration chooses.
const MAX_STRIDE: usize = 1 << 12;

impl Pace {
    /// The stride that keeps events from setting the pace (module comment).
    pub fn choose(host_with_event_ns: f64, host_without_ns: f64, gpu_ns: f64) -> Pace {
        let per_event = (host_with_event_ns - host_without_ns).max(0.0);
        let slack = 0.8 * gpu_ns - host_without_ns;
        let allowed = slack.max(0.01 * gpu_ns);
        let for_host = if host_with_event_ns <= 0.8 * gpu_ns || per_event <= allowed {
            1.0
        } else if allowed > 0.0 {
            (per_event / allowed).ceil()
        } else {
            f64::INFINITY
        };
        let for_grain = if gpu_ns > 0.0 {
            (EVENT_GRAIN_NS / (GRAIN_SHARE * gpu_ns)).ceil()
        } else {
            f64::INFINITY
        };
        let stride = for_host.max(for_grain).clamp(1.0, MAX_STRIDE as f64) as usize;
        Pace {
            host_with_event_ns,
            host_without_ns,
            gpu_ns,
            stride,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_go_less_often_only_where_they_would_set_the_pace() {
        // A fast host and an all-reduce of 200 us or more: an event after each.
        assert_eq!(Pace::choose(900.0, 600.0, 300_000.0).stride, 1);
        assert_eq!(Pace::choose(900.0, 600.0, 200_000.0).stride, 1);
        // 240 us per event record against a 300 us all-reduce: 2 all-reduces per
        // event bring the host back under 80 % of the GPU.
        let p = Pace::choose(244_500.0, 4_500.0, 300_000.0);
        assert_eq!(p.stride, 2);
        let host_at = |k: f64| p.host_without_ns + (p.host_with_event_ns - p.host_without_ns) / k;
        assert!(host_at(2.0) <= 0.8 * p.gpu_ns && host_at(1.0) > 0.8 * p.gpu_ns);
        // The host sets the pace even without events: the events may add at most
        // 1 % of the GPU's time per all-reduce.
        let p = Pace::choose(100_000.0, 70_000.0, 300_000.0);
        assert_eq!(p.stride, 1);
        let p = Pace::choose(400_000.0, 370_000.0, 300_000.0);
        assert_eq!(p.stride, 10);
        // No GPU time at all: the most a calibration chooses.
        assert_eq!(Pace::choose(1.0, 1.0, 0.0).stride, MAX_STRIDE);
    }

    #[test]
    fn events_go_less_often_where_their_grain_would_show() {
        // A fast host but a 6 us all-reduce: the 0.5 us grain needs 34 of them
        // per event to stay within 0.25 % of a step.
        let p = Pace::choose(900.0, 600.0, 6_000.0);
        assert_eq!(p.stride, 34);
        assert!(EVENT_GRAIN_NS / (34.0 * p.gpu_ns) <= GRAIN_SHARE);
        assert!(EVENT_GRAIN_NS / (33.0 * p.gpu_ns) > GRAIN_SHARE);
        // 60 us and 62 us (8 MiB on two H100s): 4 all-reduces, 200 us, per event.
        assert_eq!(Pace::choose(900.0, 600.0, 60_000.0).stride, 4);
        assert_eq!(Pace::choose(900.0, 600.0, 62_000.0).stride, 4);
        // The larger of the two needs wins.
        assert_eq!(Pace::choose(21_500.0, 450.0, 6_070.0).stride, 33);
        assert_eq!(Pace::choose(210_000.0, 450.0, 6_070.0).stride, 48);
    }

    #[test]
    fn a_launch_is_shared_exactly() {
        let mut d = [0u64; 4];
        crate::backend::spread(10, &mut d);
        assert_eq!(d, [3, 3, 2, 2]);
        crate::backend::spread(8, &mut d);
        assert_eq!(d, [2; 4]);
        let mut one = [0u64];
        crate::backend::spread(7, &mut one);
        assert_eq!(one, [7]);
    }
}
