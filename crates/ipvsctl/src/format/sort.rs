//! The order of services and real servers as ipvsadm sorts them: its
//! (wrapping) comparators and glibc's merge sort.

use super::*;

/// Sort services like ipvsadm (unless `FMT_NOSORT`).
pub fn sort_entries(entries: &mut Vec<&Entry>, format: u32) {
    if format & FMT_NOSORT == 0 {
        glibc_msort(entries, |a, b| cmp_services(&a.0, &b.0));
    }
}

pub(super) fn words(a: &IpAddr) -> [u32; 4] {
    let o = match a {
        IpAddr::V4(v) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v.octets());
            b
        }
        IpAddr::V6(v) => v.octets(),
    };
    [
        u32::from_be_bytes([o[0], o[1], o[2], o[3]]),
        u32::from_be_bytes([o[4], o[5], o[6], o[7]]),
        u32::from_be_bytes([o[8], o[9], o[10], o[11]]),
        u32::from_be_bytes([o[12], o[13], o[14], o[15]]),
    ]
}

pub(super) fn addr_cmp(a_v6: bool, a: &IpAddr, b: &IpAddr) -> i32 {
    let (wa, wb) = (words(a), words(b));
    if a_v6 {
        let mut r = 0i32;
        for i in 0..4 {
            if r != 0 {
                break;
            }
            r = wa[i].wrapping_sub(wb[i]) as i32;
        }
        r
    } else {
        wa[0].wrapping_sub(wb[0]) as i32
    }
}

/// ipvsadm's `ipvs_cmp_services` (C `int` arithmetic on unsigned values,
/// so it is not a total order; reproduced as is).
pub fn cmp_services(s1: &Service, s2: &Service) -> i32 {
    let r = s1.key.mark().wrapping_sub(s2.key.mark()) as i32;
    if r != 0 {
        return r;
    }
    let r = s1.key.family().to_af() as i32 - s2.key.family().to_af() as i32;
    if r != 0 {
        return r;
    }
    let p = |k: &ServiceKey| match k {
        ServiceKey::Addr { protocol, .. } => protocol.number() as i32,
        ServiceKey::Fwmark { .. } => 0,
    };
    let r = p(&s1.key) - p(&s2.key);
    if r != 0 {
        return r;
    }
    let r = addr_cmp(
        s1.key.family() == Family::Inet6,
        &s1.key.addr(),
        &s2.key.addr(),
    );
    if r != 0 {
        return r;
    }
    s1.key.port() as i32 - s2.key.port() as i32
}

/// ipvsadm's `ipvs_cmp_dests`.
pub fn cmp_dests(d1: &Dest, d2: &Dest) -> i32 {
    let r = addr_cmp(d1.family() == Family::Inet6, &d1.addr, &d2.addr);
    if r != 0 {
        return r;
    }
    d1.port as i32 - d2.port as i32
}

/// glibc 2.36 `qsort` (`msort_with_tmp`): top-down merge sort, left half
/// of size n/2, taking from the left run while `cmp <= 0`. With a
/// non-transitive comparator the result depends on this exact algorithm.
pub fn glibc_msort<T: Copy>(v: &mut [T], cmp: impl Fn(&T, &T) -> i32) {
    let mut tmp: Vec<T> = v.to_vec();
    msort_rec(v, &mut tmp, &cmp);
}

pub(super) fn msort_rec<T: Copy>(b: &mut [T], tmp: &mut [T], cmp: &impl Fn(&T, &T) -> i32) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (l, r) = b.split_at_mut(n1);
        msort_rec(l, &mut tmp[..n1], cmp);
        msort_rec(r, &mut tmp[n1..n], cmp);
    }
    let (mut i, mut j, mut k) = (0, n1, 0);
    while i < n1 && j < n {
        if cmp(&b[i], &b[j]) <= 0 {
            tmp[k] = b[i];
            i += 1;
        } else {
            tmp[k] = b[j];
            j += 1;
        }
        k += 1;
    }
    while i < n1 {
        tmp[k] = b[i];
        i += 1;
        k += 1;
    }
    // Remaining right-run elements are already in place.
    b[..k].copy_from_slice(&tmp[..k]);
}
