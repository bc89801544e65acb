//! The frontier against a model: random pushes (with priorities, AT, FORCE and duplicates), pops,
//! acknowledgements, NACKs, requeues, group rules and time steps, checking after every step that
//! every item pushed is exactly one of queued, leased, done or dead, that pops honour priority,
//! due times, DELAY and INFLIGHT, and that a frontier saved and loaded at any point goes on
//! exactly as the original does.

use super::*;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Queued,
    Leased,
    Done,
    Dead,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const LIMIT: u64 = u64::MAX;

fn options(rules: Rules) -> FrontierOptions {
    FrontierOptions {
        error_rate: 0.001,
        capacity: 1000,
        rules,
    }
}

/// Every item the frontier holds, with where it is.
fn census(f: &Frontier) -> Vec<(u64, State)> {
    let mut out = Vec::new();
    for host in f.hosts.iter().flatten() {
        for queue in &host.queues {
            out.extend(queue.fresh.iter().map(|r| (r.id, State::Queued)));
            out.extend(queue.returned.keys().map(|&id| (id, State::Queued)));
        }
    }
    out.extend(f.held.keys().map(|&(_, id)| (id, State::Queued)));
    out.extend(f.leases.keys().map(|&id| (id, State::Leased)));
    out.extend(f.dead.keys().map(|&id| (id, State::Dead)));
    out
}

/// The structures agree with each other: every group where it belongs, counts as they are.
fn check_structure(f: &Frontier) {
    let mut queued = 0;
    for (slot, host) in f.hosts.iter().enumerate() {
        let Some(host) = host else { continue };
        assert_eq!(f.by_group.get(&host.group), Some(&(slot as u32)));
        assert_eq!(host.placement(f.clock, &f.rules), Some(host.place));
        match host.place {
            Place::Ready(p, id) => assert_eq!(f.ready.get(&(Reverse(p), id)), Some(&(slot as u32))),
            Place::Timer(at) => assert!(f.timers.contains(&(at, slot as u32))),
            Place::Idle => {}
        }
        queued += host.queued() as u64;
        let leased = f.leases.values().filter(|l| l.host == slot as u32).count();
        assert_eq!(host.leased as usize, leased);
        let held = f.held.values().filter(|h| h.host == slot as u32).count();
        assert_eq!(host.held as usize, held);
        let mut group = Vec::new();
        for queue in &host.queues {
            assert!(!queue.is_empty());
            for item in queue.returned.values() {
                group_of(&item.url, &mut group);
                assert_eq!(group, &host.group[..]);
            }
        }
    }
    assert_eq!(queued, f.queued);
    assert!(f.ready.len() + f.timers.len() <= f.by_group.len());
    assert_eq!(f.leases.len(), f.deadlines.len());
    assert!(f.deadlines.iter().all(|&(at, _)| at > f.clock));
    assert!(f.held.keys().all(|&(due, _)| due > f.clock));
    assert!(f.timers.iter().all(|&(at, _)| at > f.clock));
}

struct Model {
    /// Every id pushed (answered 1), with its URL and where it should be.
    items: HashMap<u64, (Vec<u8>, State)>,
    /// The last lease of each group, for DELAY.
    last_lease: HashMap<Vec<u8>, u64>,
}

fn url(rng: &mut Rng) -> Vec<u8> {
    let host = [
        "http://a.test",
        "https://B.test",
        "http://c.test:8080",
        "",
        "https://d.test",
    ][rng.below(5) as usize];
    format!("{host}/p{}", rng.below(400)).into_bytes()
}

#[test]
fn items_are_never_lost_or_duplicated_and_pops_follow_the_rules() {
    for seed in 1..=12u64 {
        run_model(seed, 3000);
    }
}

fn run_model(seed: u64, steps: usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let rules = Rules {
        lease_ms: 50 + rng.below(200),
        retries: rng.below(4) as u32,
        delay_ms: [0, 0, 5, 30][rng.below(4) as usize],
        inflight: rng.below(3) as u32,
    };
    let mut f = Frontier::new(options(rules), LIMIT).unwrap();
    let mut model = Model {
        items: HashMap::new(),
        last_lease: HashMap::new(),
    };
    let mut now = 1_000u64;
    let mut group = Vec::new();
    let mut copy: Option<(Frontier, u64, Vec<Step>)> = None;
    let mut steps_since_copy = Vec::new();
    for step in 0..steps {
        let op = rng.below(100);
        let action = if op < 40 {
            let u = url(&mut rng);
            let at = (rng.below(6) == 0).then(|| now + rng.below(300));
            Step::Push(u, rng.below(3) as i64 - 1, at, rng.below(20) == 0)
        } else if op < 65 {
            Step::Pop(
                1 + rng.below(5) as usize,
                (rng.below(3) == 0).then(|| 10 + rng.below(100)),
            )
        } else if op < 78 {
            Step::Ack(pick_id(&mut rng, &model, State::Leased))
        } else if op < 85 {
            Step::Nack(pick_id(&mut rng, &model, State::Leased), rng.below(100))
        } else if op < 88 {
            Step::Requeue(pick_id(&mut rng, &model, State::Dead))
        } else if op < 90 {
            let g = url(&mut rng);
            group_of(&g, &mut group);
            Step::Host(
                group.clone(),
                HostChange {
                    delay_ms: (rng.below(2) == 0).then(|| rng.below(40)),
                    inflight: (rng.below(2) == 0).then(|| rng.below(3) as u32),
                    paused_until: (rng.below(3) == 0).then(|| now + rng.below(200)),
                },
            )
        } else {
            Step::Wait(rng.below(80))
        };
        apply(&mut f, &mut model, &mut now, &action);
        steps_since_copy.push(action);
        check_structure(&f);
        check_census(&f, &model);
        if let Some((_, _, steps)) = copy.as_mut() {
            steps.append(&mut steps_since_copy);
        }
        if step % 250 == 0 {
            if let Some((mut saved, mut saved_now, steps)) = copy.take() {
                // The copy, saved and loaded, went through the same steps: it must be the same.
                for s in &steps {
                    run(&mut saved, &mut saved_now, s);
                }
                assert_eq!(describe(&saved), describe(&f), "seed {seed} step {step}");
                assert!(saved.encode() == f.encode(), "seed {seed} step {step}");
            }
            let reloaded = Frontier::decode(&f.encode()).expect("its own encoding");
            assert_eq!(describe(&reloaded), describe(&f));
            assert!(reloaded.encode() == f.encode());
            check_structure(&reloaded);
            copy = Some((reloaded, now, Vec::new()));
            steps_since_copy.clear();
        }
    }
}

/// Everything but the seen-set's bits, in a canonical order, for a readable comparison.
fn describe(f: &Frontier) -> String {
    let mut hosts: Vec<String> = f
        .hosts
        .iter()
        .flatten()
        .map(|h| {
            let queues: Vec<(i64, Vec<(u64, u32)>)> = h
                .queues
                .iter()
                .map(|q| {
                    let mut ids: Vec<(u64, u32)> =
                        q.fresh.iter().map(|r| (r.id, r.deliveries)).collect();
                    ids.extend(q.returned.iter().map(|(&id, i)| (id, i.deliveries)));
                    ids.sort_unstable();
                    (q.priority, ids)
                })
                .collect();
            format!(
                "{} {:?} {:?} {} {:?} {} {} {:?} {:?}",
                String::from_utf8_lossy(&h.group),
                h.delay,
                h.inflight,
                h.paused_until,
                h.last_lease,
                h.leased,
                h.held,
                h.place,
                queues
            )
        })
        .collect();
    hosts.sort();
    let mut leases: Vec<_> = f
        .leases
        .iter()
        .map(|(id, l)| (*id, l.deadline, l.item.deliveries))
        .collect();
    leases.sort_unstable();
    format!(
        "clock {} next {} done {} queued {}\n{}\nheld {:?}\nleases {:?}\ndead {:?}\nready {:?}\ntimers {}",
        f.clock,
        f.next_id,
        f.done,
        f.queued,
        hosts.join("\n"),
        f.held.keys().collect::<Vec<_>>(),
        leases,
        f.dead.iter().map(|(id, i)| (*id, i.deliveries)).collect::<Vec<_>>(),
        f.ready.keys().collect::<Vec<_>>(),
        f.timers.len()
    )
}

#[derive(Debug, Clone)]
enum Step {
    Push(Vec<u8>, i64, Option<u64>, bool),
    Pop(usize, Option<u64>),
    Ack(Option<u64>),
    Nack(Option<u64>, u64),
    Requeue(Option<u64>),
    Host(Vec<u8>, HostChange),
    Wait(u64),
}

fn pick_id(rng: &mut Rng, model: &Model, state: State) -> Option<u64> {
    let mut ids: Vec<u64> = model
        .items
        .iter()
        .filter(|(_, (_, s))| *s == state)
        .map(|(&id, _)| id)
        .collect();
    ids.sort_unstable();
    match ids.is_empty() || rng.below(10) == 0 {
        true => Some(rng.below(50)),
        false => Some(ids[rng.below(ids.len() as u64) as usize]),
    }
}

/// Runs a step; returns what pops leased.
fn run(f: &mut Frontier, now: &mut u64, step: &Step) -> (Vec<Leased>, Option<bool>) {
    match step {
        Step::Push(url, priority, at, force) => {
            let pushed = f.push(url, *priority, *at, *force, LIMIT).unwrap();
            (Vec::new(), Some(pushed))
        }
        Step::Pop(count, lease) => {
            let mut out = Vec::new();
            if f.has_work(*now) {
                f.advance(*now);
                f.pop(*count, lease.unwrap_or(f.rules.lease_ms), &mut out);
            }
            (out, None)
        }
        Step::Ack(id) => (Vec::new(), Some(f.ack(id.unwrap_or(0), Some(*now)))),
        Step::Nack(id, delay) => {
            let due = (*now).max(f.clock()).saturating_add(*delay);
            let nacked = f.nack(id.unwrap_or(0), Some(*now), due);
            (Vec::new(), Some(nacked.is_some()))
        }
        Step::Requeue(id) => {
            f.advance(*now);
            (Vec::new(), Some(f.requeue(id.unwrap_or(0))))
        }
        Step::Host(group, change) => {
            f.set_host(group, *change);
            (Vec::new(), None)
        }
        Step::Wait(ms) => {
            *now += ms;
            (Vec::new(), None)
        }
    }
}

fn apply(f: &mut Frontier, model: &mut Model, now: &mut u64, step: &Step) {
    let before_clock = f.clock();
    // What the model expects of a pop: leases that ran out first go back or die.
    if let Step::Pop(..) | Step::Requeue(_) = step {
        let t = (*now).max(before_clock);
        for (&id, lease) in &f.leases {
            if lease.deadline <= t {
                let died = f.rules.retries > 0 && lease.item.deliveries >= f.rules.retries;
                model.items.get_mut(&id).unwrap().1 =
                    if died { State::Dead } else { State::Queued };
            }
        }
    }
    let next_id = f.next_id;
    let (leased, answer) = run(f, now, step);
    match step {
        Step::Push(url, _, _, force) => {
            let pushed = answer.unwrap();
            if *force {
                assert!(pushed);
            }
            if pushed {
                assert_eq!(f.next_id, next_id + 1);
                model.items.insert(next_id, (url.clone(), State::Queued));
            } else {
                assert!(f.seen(url));
            }
        }
        Step::Pop(count, _) => {
            assert!(leased.len() <= *count);
            let mut groups_this_pop: HashMap<Vec<u8>, u32> = HashMap::new();
            for l in &leased {
                let (url, state) = model.items.get_mut(&l.id).expect("a pushed id");
                assert_eq!(*state, State::Queued, "leased only from the queue");
                assert_eq!(&l.url, url);
                *state = State::Leased;
                let mut group = Vec::new();
                group_of(url, &mut group);
                assert_eq!(group, l.group);
                let rules = f.host_rules(&group, f.clock());
                if rules.delay_ms > 0 {
                    if let Some(last) = model.last_lease.get(&group) {
                        assert!(f.clock() >= last + rules.delay_ms, "DELAY kept");
                    }
                    assert!(
                        !groups_this_pop.contains_key(&group),
                        "one per pop under DELAY"
                    );
                }
                let this_pop = groups_this_pop.entry(group.clone()).or_default();
                *this_pop += 1;
                if rules.inflight > 0 {
                    assert!(*this_pop <= rules.inflight, "INFLIGHT kept");
                }
                model.last_lease.insert(group, f.clock());
            }
            // A pop stops short only when no group may be leased from.
            if leased.len() < *count {
                assert!(f.ready.is_empty(), "a pop stops only when nothing is ready");
            }
        }
        Step::Ack(Some(id)) if answer.unwrap() => {
            let state = &mut model.items.get_mut(id).unwrap().1;
            assert_eq!(*state, State::Leased);
            *state = State::Done;
        }
        Step::Nack(Some(id), _) if answer.unwrap() => {
            let state = &mut model.items.get_mut(id).unwrap().1;
            assert_eq!(*state, State::Leased);
            *state = if f.dead.contains_key(id) {
                State::Dead
            } else {
                State::Queued
            };
        }
        Step::Requeue(Some(id)) if answer.unwrap() => {
            let state = &mut model.items.get_mut(id).unwrap().1;
            assert_eq!(*state, State::Dead);
            *state = State::Queued;
        }
        _ => {}
    }
}

fn check_census(f: &Frontier, model: &Model) {
    let census = census(f);
    let mut seen = HashSet::new();
    for &(id, state) in &census {
        assert!(seen.insert(id), "item {id} is in two places");
        let expected = model.items.get(&id).map(|(_, s)| *s);
        // A lease that ran out is still in `leases` until an advance; the model knows it only
        // then too (it moves items when a pop or requeue advances).
        assert_eq!(Some(state), expected, "item {id}");
    }
    let done = model
        .items
        .values()
        .filter(|(_, s)| *s == State::Done)
        .count();
    assert_eq!(done as u64, f.done);
    assert_eq!(census.len() + done, model.items.len(), "no item lost");
    let info = f.info(f.clock());
    assert_eq!(
        info.queued + info.leased + info.done + info.dead,
        model.items.len() as u64
    );
}

#[test]
fn a_pop_takes_priority_then_age_and_skips_what_is_not_due() {
    let rules = Rules {
        lease_ms: 1000,
        retries: 3,
        delay_ms: 0,
        inflight: 0,
    };
    let mut f = Frontier::new(options(rules), LIMIT).unwrap();
    f.push(b"http://a/1", 0, None, false, LIMIT).unwrap();
    f.push(b"http://b/1", 5, None, false, LIMIT).unwrap();
    f.push(b"http://a/2", 5, Some(200), false, LIMIT).unwrap();
    f.push(b"http://c/1", 0, None, false, LIMIT).unwrap();
    assert!(!f.push(b"http://a/1", 0, None, false, LIMIT).unwrap());
    f.advance(100);
    let mut out = Vec::new();
    f.pop(10, 1000, &mut out);
    let urls: Vec<&[u8]> = out.iter().map(|l| &l.url[..]).collect();
    assert_eq!(urls, [&b"http://b/1"[..], b"http://a/1", b"http://c/1"]);
    assert_eq!(out.iter().map(|l| l.id).collect::<Vec<_>>(), [2, 1, 4]);
    assert!(out.iter().all(|l| l.deadline == 1100));
    f.advance(200);
    out.clear();
    f.pop(10, 1000, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].url, b"http://a/2");
}

#[test]
fn a_lease_that_runs_out_comes_back_with_its_id_then_dies() {
    let rules = Rules {
        lease_ms: 10,
        retries: 2,
        delay_ms: 0,
        inflight: 0,
    };
    let mut f = Frontier::new(options(rules), LIMIT).unwrap();
    f.push(b"http://a/x", 0, None, false, LIMIT).unwrap();
    let mut out = Vec::new();
    for round in 0..2u64 {
        f.advance(100 + round * 20);
        out.clear();
        f.pop(1, 10, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id, 1);
        assert_eq!(f.info(100 + round * 20).leased, 1);
    }
    assert!(!f.ack(1, Some(200)), "too late");
    assert_eq!(f.info(200).dead, 1);
    assert_eq!(f.dead_items(200, 10), vec![(1, b"http://a/x".to_vec(), 2)]);
    f.advance(200);
    assert_eq!(f.dead_items(200, 10), vec![(1, b"http://a/x".to_vec(), 2)]);
    assert!(f.requeue(1));
    out.clear();
    f.pop(1, 10, &mut out);
    assert_eq!(out[0].id, 1);
    assert!(f.ack(1, Some(205)));
    assert_eq!(f.info(205).done, 1);
    assert_eq!(
        f.by_group.len(),
        0,
        "an idle group without rules is dropped"
    );
}

/// Issue 31, item 7: once a lease runs out, FQ.HOST's counts and FQ.INFO's agree, before any
/// pop moved the clock: the item is queued again (or dead, on its last delivery).
#[test]
fn host_and_info_count_a_lapsed_lease_alike() {
    let rules = Rules {
        lease_ms: 10,
        retries: 2,
        delay_ms: 0,
        inflight: 0,
    };
    let mut f = Frontier::new(options(rules), LIMIT).unwrap();
    f.push(b"http://a/x", 0, None, false, LIMIT).unwrap();
    f.push(b"http://b/y", 0, None, false, LIMIT).unwrap();
    let mut out = Vec::new();
    f.advance(100);
    f.pop(2, 10, &mut out);
    assert_eq!(out.len(), 2);
    for (now, queued, leased) in [(105, 0, 1), (110, 1, 0)] {
        let info = f.info(now);
        let a = f.host_rules(b"http://a", now);
        let b = f.host_rules(b"http://b", now);
        assert_eq!((a.queued, a.leased), (queued, leased), "at {now}");
        assert_eq!(
            (info.queued, info.leased),
            (a.queued + b.queued, a.leased + b.leased)
        );
    }
    // The second lapse is the last delivery: dead, in neither count.
    f.advance(110);
    out.clear();
    f.pop(1, 10, &mut out);
    let a = f.host_rules(b"http://a", 125);
    assert_eq!((a.queued, a.leased), (0, 0));
    assert_eq!(f.info(125).dead, 1);
}

#[test]
fn delay_and_inflight_hold_a_group_back_without_holding_others() {
    let rules = Rules {
        lease_ms: 1000,
        retries: 3,
        delay_ms: 100,
        inflight: 0,
    };
    let mut f = Frontier::new(options(rules), LIMIT).unwrap();
    for i in 0..1000 {
        f.push(format!("http://slow/{i}").as_bytes(), 0, None, false, LIMIT)
            .unwrap();
    }
    f.push(b"http://other/1", 0, None, false, LIMIT).unwrap();
    f.set_host(
        b"http://other",
        HostChange {
            delay_ms: Some(0),
            inflight: Some(1),
            paused_until: None,
        },
    );
    f.push(b"http://other/2", 0, None, false, LIMIT).unwrap();
    f.advance(1000);
    let mut out = Vec::new();
    f.pop(10, 1000, &mut out);
    let urls: Vec<&[u8]> = out.iter().map(|l| &l.url[..]).collect();
    assert_eq!(urls, [&b"http://slow/0"[..], b"http://other/1"]);
    assert!(f.ack(out[1].id, Some(1000)));
    f.advance(1050);
    out.clear();
    f.pop(10, 1000, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].url, b"http://other/2");
    f.advance(1100);
    out.clear();
    f.pop(10, 1000, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].url, b"http://slow/1");
}

#[test]
fn a_queued_url_costs_its_bytes_and_little_more() {
    let rules = Rules {
        lease_ms: 1000,
        retries: 3,
        delay_ms: 0,
        inflight: 0,
    };
    let mut f = Frontier::new(
        FrontierOptions {
            error_rate: 0.01,
            capacity: 200_000,
            rules,
        },
        LIMIT,
    )
    .unwrap();
    let before = f.memory_bytes();
    let mut bytes = 0;
    for i in 0..200_000u64 {
        let url = format!(
            "https://host{}.example.com/some/path/page-{i}.html",
            i % 1000
        );
        bytes += url.len() as u64;
        f.push(url.as_bytes(), 0, None, false, LIMIT).unwrap();
    }
    let per_url = (f.memory_bytes() - before) as f64 / 200_000.0 - bytes as f64 / 200_000.0;
    assert!(per_url < 8.0, "{per_url} bytes per URL beyond its own");
}

#[test]
fn pushes_stop_at_the_limit_without_changing_anything() {
    let rules = Rules {
        lease_ms: 1000,
        retries: 3,
        delay_ms: 0,
        inflight: 0,
    };
    let mut f = Frontier::new(options(rules), 1 << 20).unwrap();
    let mut refused = 0;
    for i in 0..100_000 {
        let url = format!("http://h{}/{i}", i % 50);
        match f.push(url.as_bytes(), 0, None, false, 1 << 20) {
            Ok(_) => {}
            Err(FilterError::TooLarge { .. }) => {
                refused += 1;
                assert!(!f.seen(url.as_bytes()) || f.seen.items() > 0);
            }
            Err(other) => panic!("{other}"),
        }
        assert!(f.memory_bytes() <= (1 << 20) + 4096);
    }
    assert!(refused > 0);
    check_structure(&f);
}

/// Damaged encodings are refused or load into a frontier that works: no panic, no allocation
/// beyond what the bytes can describe.
#[test]
fn damaged_encodings_never_panic() {
    let rules = Rules {
        lease_ms: 100,
        retries: 2,
        delay_ms: 10,
        inflight: 1,
    };
    let mut f = Frontier::new(options(rules), LIMIT).unwrap();
    for i in 0..40u64 {
        let url = format!("http://h{}.test/{i}", i % 4);
        f.push(
            url.as_bytes(),
            (i % 3) as i64,
            (i % 5 == 0).then_some(500),
            false,
            LIMIT,
        )
        .unwrap();
    }
    f.advance(100);
    let mut out = Vec::new();
    f.pop(5, 100, &mut out);
    f.nack(out[0].id, Some(100), 100);
    f.ack(out[1].id, Some(100));
    f.set_host(
        b"http://h2.test",
        HostChange {
            delay_ms: Some(1),
            inflight: None,
            paused_until: Some(900),
        },
    );
    let good = f.encode();
    let mut rng = Rng(99);
    let mut loaded = 0;
    for round in 0..4000 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] = match round % 3 {
                0 => rng.next() as u8,
                1 => bytes[at].wrapping_add(1),
                _ => 0xff,
            };
        }
        if round % 7 == 0 {
            bytes.truncate(rng.below(bytes.len() as u64) as usize);
        }
        let Ok(mut g) = Frontier::decode(&bytes) else {
            continue;
        };
        loaded += 1;
        let now = g.clock() + rng.below(1000);
        g.push(b"http://h1.test/new", 0, None, false, LIMIT)
            .unwrap();
        if g.has_work(now) {
            g.advance(now);
        }
        let mut out = Vec::new();
        g.pop(10, 50, &mut out);
        for l in &out {
            g.ack(l.id, Some(now));
        }
        g.requeue(1);
        let _ = g.info(now);
        let _ = g.dead_items(now, 10);
        let _ = Frontier::decode(&g.encode()).expect("a loaded frontier saves and loads");
    }
    assert!(
        loaded > 0,
        "some damage (to a URL's bytes, say) still loads"
    );
}
