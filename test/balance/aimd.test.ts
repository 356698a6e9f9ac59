import { describe, expect, it } from 'vitest';
import { controllerFixture, feed, scripted, SLOW_MS, OK_MS } from './helpers.js';

// Parameters (helpers TEST_AIMD): budget 1000 ms, window 8, min 4, target 0.25, recovery 0.125,
// step 0.125, decay 0.5, floor 0.125, dwell 1000 ms, idle recovery off unless a test turns it on.

describe('share controller: decrease (rate above target)', () => {
  it('waits for min_samples, then multiplies the share by share_decay', () => {
    const { controller, clock } = controllerFixture();
    clock.advance(250);
    feed(controller, 'bbb'); // 3 breaches of 3: rate 1, but fewer than min_samples
    expect(controller.share).toBe(1);
    feed(controller, 'o'); // 3 of 4 = 0.75 > 0.25
    expect(controller.share).toBe(0.5);
  });

  it('clears the window and restarts the dwell', async () => {
    const { controller, clock, read } = controllerFixture();
    clock.advance(4321);
    feed(controller, 'obob');
    expect(controller.snapshot()).toMatchObject({
      share: 0.5,
      samples: 0,
      breaches: 0,
      lastAdjustmentAt: 4321,
    });
    expect(await read('aimd_window_samples')).toBe(0);
    expect(await read('aimd_window_breach_rate')).toBe(0);
    expect(await read('share_adjustments_total', { direction: 'decrease' })).toBe(1);
    expect(await read('provider_share')).toBe(0.5);
  });

  it('is not delayed by the dwell, but needs min_samples fresh outcomes for the next decrease', () => {
    const { controller, clock } = controllerFixture();
    feed(controller, 'bbbb');
    expect(controller.share).toBe(0.5);
    clock.advance(1);
    feed(controller, 'bbb'); // the old breaches were cleared: 3 samples only
    expect(controller.share).toBe(0.5);
    feed(controller, 'b');
    expect(controller.share).toBe(0.25);
  });

  it('stops at share_floor; a decision at the floor still clears the window but is no adjustment', async () => {
    const { controller, clock, read } = controllerFixture();
    for (const expected of [0.5, 0.25, 0.125, 0.125, 0.125]) {
      clock.advance(10);
      feed(controller, 'bbbb');
      expect(controller.share).toBe(expected);
      expect(controller.snapshot()).toMatchObject({ samples: 0, lastAdjustmentAt: clock.now() });
    }
    expect(await read('share_adjustments_total', { direction: 'decrease' })).toBe(3);
  });

  it('clamps a decay that would undershoot the floor to the floor', () => {
    const { controller } = controllerFixture({ share_floor: 0.2 });
    feed(controller, 'bbbb bbbb bbbb');
    expect(controller.share).toBe(0.2); // 1 -> 0.5 -> 0.25 -> 0.2, not 0.125
  });

  it('does not decrease at exactly the target rate', () => {
    const { controller } = controllerFixture();
    feed(controller, 'oooooobb'); // 2 of 8 = 0.25, not above 0.25
    expect(controller.share).toBe(1);
    feed(controller, 'b'); // window slides: the first ok leaves, 3 of 8
    expect(controller.share).toBe(0.5);
  });

  it('measures over the last window_samples outcomes only', () => {
    const { controller } = controllerFixture();
    feed(controller, 'oobo oooo'); // one breach, never more than 1 in 8
    expect(controller.snapshot()).toMatchObject({ samples: 8, breaches: 1 });
    feed(controller, 'oo'); // the two oldest slide out; the breach is still in
    expect(controller.snapshot()).toMatchObject({ samples: 8, breaches: 1 });
    feed(controller, 'o'); // now it slides out
    expect(controller.snapshot()).toMatchObject({ samples: 8, breaches: 0, share: 1 });
  });
});

describe('share controller: increase (rate at or below recovery for dwell_ms)', () => {
  /** Share 0.5 after a decrease at t = 0; the window is empty. */
  function decreased() {
    const fixture = controllerFixture();
    feed(fixture.controller, 'bbbb');
    expect(fixture.controller.share).toBe(0.5);
    return fixture;
  }

  it('adds share_step after dwell_ms of healthy judgement, keeping the window', async () => {
    const { controller, read, shareAfter } = decreased();
    feed(controller, 'oooo'); // healthy from t = 0 (same instant as the decrease)
    expect(shareAfter(999)).toBe(0.5);
    expect(shareAfter(1)).toBe(0.625);
    expect(controller.snapshot()).toMatchObject({ samples: 4, lastAdjustmentAt: 1000 });
    expect(await read('share_adjustments_total', { direction: 'increase' })).toBe(1);
    expect(await read('provider_share')).toBe(0.625);
  });

  it('restarts the dwell after an increase: one step per dwell while healthy', () => {
    const { controller, shareAfter } = decreased();
    feed(controller, 'oooo');
    for (const expected of [0.625, 0.75, 0.875, 1, 1]) {
      expect(shareAfter(1000)).toBe(expected);
    }
  });

  it('counts healthy time from the later of the last adjustment and the start of the healthy period', () => {
    const { controller, clock, shareAfter } = decreased();
    clock.advance(600);
    feed(controller, 'oooo'); // judged healthy only now, at t = 600
    expect(shareAfter(999)).toBe(0.5);
    expect(shareAfter(1)).toBe(0.625);
  });

  it('treats a rate exactly at recovery_breach_rate as healthy', () => {
    const { controller, shareAfter } = decreased();
    feed(controller, 'ooooooob'); // 1 of 8 = 0.125
    expect(shareAfter(1000)).toBe(0.625);
  });

  it('needs the healthy period to be continuous: a spell in the hold band restarts it', () => {
    const { controller, clock, shareAfter } = decreased();
    feed(controller, 'oooooo'); // healthy at t = 0
    clock.advance(500);
    feed(controller, 'bb'); // 2 of 8: hold
    clock.advance(200);
    feed(controller, 'oo'); // the window slides to oooobboo: still 2 of 8
    expect(controller.snapshot().healthySince).toBeUndefined();
    feed(controller, 'oooooo'); // breaches slid out at t = 700
    expect(controller.snapshot().healthySince).toBe(700);
    clock.advance(800); // t = 1500: more than dwell since the decrease, not since the healthy start
    controller.tick();
    expect(controller.share).toBe(0.5);
    expect(shareAfter(200)).toBe(0.625);
  });

  it('applies every dwell boundary that passed while nobody touched the controller', () => {
    const { controller, shareAfter } = decreased();
    feed(controller, 'oooo');
    expect(shareAfter(3500)).toBe(0.875);
    expect(controller.snapshot().lastAdjustmentAt).toBe(3000); // the phase of the dwell is kept
    expect(shareAfter(500)).toBe(1);
  });

  it('stops at 1 and counts only steps that changed the share', async () => {
    const { controller, read, shareAfter } = decreased();
    feed(controller, 'oooo');
    expect(shareAfter(60_000)).toBe(1);
    expect(await read('share_adjustments_total', { direction: 'increase' })).toBe(4);
  });

  it('needs min_samples outcomes to judge the rate healthy', () => {
    const { controller, shareAfter } = decreased();
    feed(controller, 'ooo'); // below min_samples, idle recovery off
    expect(shareAfter(3_600_000)).toBe(0.5);
  });
});

describe('share controller: hold (rate between the thresholds)', () => {
  it('keeps the share however long the rate stays in the band', async () => {
    const { controller, read, shareAfter } = controllerFixture({ idle_recovery_ms: 5000 });
    feed(controller, 'bbbb'); // 0.5
    feed(controller, 'ooooooob'); // 1 of 8: healthy
    feed(controller, 'b'); // 2 of 8: hold, healthy period over
    expect(shareAfter(3_600_000)).toBe(0.5);
    expect(controller.snapshot()).toMatchObject({ samples: 8, breaches: 2, healthySince: undefined });
    expect(await read('aimd_window_breach_rate')).toBe(0.25);
    expect(await read('share_adjustments_total', { direction: 'increase' })).toBe(0);
  });
});

describe('share controller: idle recovery (too few samples to judge)', () => {
  it('earns one step per idle_recovery_ms since the last adjustment, keeping the window', () => {
    const { controller, clock, shareAfter } = controllerFixture({ idle_recovery_ms: 5000 });
    clock.advance(100);
    feed(controller, 'bbbb'); // 0.5 at t = 100
    feed(controller, 'bb'); // 2 samples: too few to judge
    expect(shareAfter(4999)).toBe(0.5);
    expect(shareAfter(1)).toBe(0.625);
    expect(controller.snapshot()).toMatchObject({ samples: 2, lastAdjustmentAt: 5100 });
    expect(shareAfter(10_000)).toBe(0.875);
  });

  it('moves the share gauge of a pool without traffic through tick', async () => {
    const { controller, clock, read } = controllerFixture({ idle_recovery_ms: 5000 });
    feed(controller, 'bbbb');
    clock.advance(5000);
    expect(await read('provider_share')).toBe(0.5);
    controller.tick();
    expect(await read('provider_share')).toBe(0.625);
    expect(await read('share_adjustments_total', { direction: 'increase' })).toBe(1);
  });

  it('restarts the idle interval at a decrease', () => {
    const { controller, clock, shareAfter } = controllerFixture({ idle_recovery_ms: 5000 });
    feed(controller, 'bbbb'); // t = 0
    clock.advance(4000);
    feed(controller, 'bbbb'); // 0.25 at t = 4000
    expect(shareAfter(4999)).toBe(0.25);
    expect(shareAfter(1)).toBe(0.375);
  });

  it('is disabled by idle_recovery_ms 0', () => {
    const { controller, shareAfter } = controllerFixture({ idle_recovery_ms: 0 });
    feed(controller, 'bbbb');
    expect(shareAfter(86_400_000)).toBe(0.5);
  });

  it('does not apply once enough samples exist to judge', () => {
    const { controller, shareAfter } = controllerFixture({ idle_recovery_ms: 5000 });
    feed(controller, 'bbbb');
    feed(controller, 'oobb'); // 4 samples, 2 breaches = 0.5: judged, and a decrease
    expect(controller.share).toBe(0.25);
    feed(controller, 'oooooo b b'); // 8 samples, 2 breaches: hold
    expect(controller.share).toBe(0.25);
    expect(shareAfter(60_000)).toBe(0.25);
  });
});

describe('share controller: outcome classes', () => {
  it('counts a first token later than the budget as a breach, at the budget as ok', async () => {
    const { controller, read } = controllerFixture();
    expect(controller.observeFirstToken(1000)).toBe('ok');
    expect(controller.observeFirstToken(1001)).toBe('breach');
    expect(controller.snapshot()).toMatchObject({ samples: 2, breaches: 1 });
    expect(await read('first_token_seconds_count', { role: 'preferred' })).toBe(2);
    expect(await read('first_token_seconds_bucket', { role: 'preferred', le: '1' })).toBe(1);
    expect(await read('first_token_seconds_sum', { role: 'preferred' })).toBeCloseTo(2.001, 9);
    expect(await read('first_token_breaches_total', { role: 'preferred' })).toBe(1);
  });

  it('treats a deadline expiry as censored: a breach at or after the budget, never a latency', async () => {
    const { controller, read } = controllerFixture();
    expect(controller.observeDeadlineExpiry(1000)).toBe('breach');
    expect(controller.observeDeadlineExpiry(4000)).toBe('breach');
    expect(controller.snapshot()).toMatchObject({ samples: 2, breaches: 2 });
    expect(await read('first_token_breaches_total', { role: 'preferred' })).toBe(2);
    expect(await read('first_token_seconds_count', { role: 'preferred' })).toBe(0);
  });

  it('treats a deadline expiry below the budget as unknown', async () => {
    const { controller, read } = controllerFixture();
    expect(controller.observeDeadlineExpiry(999)).toBe('unknown');
    expect(controller.snapshot().samples).toBe(0);
    expect(await read('aimd_unknown_total')).toBe(1);
    expect(await read('first_token_breaches_total', { role: 'preferred' })).toBe(0);
    expect(await read('first_token_seconds_count', { role: 'preferred' })).toBe(0);
  });

  it('counts overload statuses as breaches, by status', async () => {
    const { controller, read } = controllerFixture();
    expect(controller.observeStatus(503)).toBe('breach');
    expect(controller.observeStatus(429)).toBe('breach');
    expect(controller.observeStatus(503)).toBe('breach');
    expect(controller.snapshot()).toMatchObject({ samples: 3, breaches: 3 });
    expect(await read('aimd_overload_breaches_total', { status: '503' })).toBe(2);
    expect(await read('aimd_overload_breaches_total', { status: '429' })).toBe(1);
    expect(await read('aimd_overload_breaches_total', { status: '529' })).toBe(0);
    expect(await read('first_token_breaches_total', { role: 'preferred' })).toBe(0);
    controller.observeStatus(529);
    expect(controller.share).toBe(0.5); // four breaches: the rate drives the share like latency does
  });

  it('honours configured overload statuses only', async () => {
    const { controller, read } = controllerFixture({ overload_statuses: [500] });
    expect(controller.observeStatus(500)).toBe('breach');
    expect(controller.observeStatus(503)).toBe('unknown');
    expect(await read('aimd_overload_breaches_total', { status: '500' })).toBe(1);
    expect(await read('aimd_overload_breaches_total', { status: '503' })).toBeUndefined();
  });

  it('counts other error statuses as unknown and a success status as no outcome', async () => {
    const { controller, read } = controllerFixture();
    expect(controller.observeStatus(500)).toBe('unknown');
    expect(controller.observeStatus(404)).toBe('unknown');
    expect(controller.observeStatus(200)).toBeUndefined();
    expect(controller.observeStatus(304)).toBeUndefined();
    expect(controller.snapshot().samples).toBe(0);
    expect(await read('aimd_unknown_total')).toBe(2);
  });

  it('keeps unknown outcomes out of the rate and its denominator', async () => {
    const { controller, read } = controllerFixture();
    feed(controller, 'o');
    for (let i = 0; i < 10; i++) controller.observeUnknown();
    controller.observeStatus(502);
    feed(controller, 'ob');
    expect(controller.snapshot()).toMatchObject({ samples: 3, breaches: 1, share: 1 });
    expect(await read('aimd_window_samples')).toBe(3);
    expect(await read('aimd_unknown_total')).toBe(11);
    feed(controller, 'b'); // 2 of 4 completed outcomes: the unknowns did not dilute the rate
    expect(controller.share).toBe(0.5);
  });

  it('never moves the share with alternate outcomes, which only feed the alternate series', async () => {
    const { controller, read, shareAfter } = controllerFixture({ idle_recovery_ms: 5000 });
    for (let i = 0; i < 20; i++) {
      expect(controller.observeFirstToken(SLOW_MS, 'alternate')).toBe('breach');
      expect(controller.observeDeadlineExpiry(2000, 'alternate')).toBe('breach');
      expect(controller.observeDeadlineExpiry(10, 'alternate')).toBe('unknown');
      expect(controller.observeStatus(503, 'alternate')).toBe('breach');
      expect(controller.observeStatus(500, 'alternate')).toBe('unknown');
      expect(controller.observeUnknown('alternate')).toBe('unknown');
    }
    controller.observeFirstToken(OK_MS, 'alternate');
    expect(controller.snapshot()).toMatchObject({ share: 1, samples: 0 });
    expect(await read('first_token_seconds_count', { role: 'alternate' })).toBe(21);
    expect(await read('first_token_breaches_total', { role: 'alternate' })).toBe(40);
    expect(await read('first_token_seconds_count', { role: 'preferred' })).toBe(0);
    expect(await read('aimd_unknown_total')).toBe(0);
    expect(await read('aimd_overload_breaches_total', { status: '503' })).toBe(0);

    // Nor do they count as samples for idle recovery's "too few to judge".
    feed(controller, 'bbbb');
    for (let i = 0; i < 20; i++) controller.observeFirstToken(OK_MS, 'alternate');
    expect(shareAfter(5000)).toBe(0.625);
  });

  it('rejects durations a monotonic clock cannot produce', () => {
    const { controller } = controllerFixture();
    expect(() => controller.observeFirstToken(-1)).toThrow(RangeError);
    expect(() => controller.observeDeadlineExpiry(Number.NaN)).toThrow(RangeError);
    expect(() => controller.observeFirstToken(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe('share controller: attempts', () => {
  it('settles an attempt once, whichever outcome comes first', () => {
    const { controller } = controllerFixture();
    const expired = controller.startAttempt('preferred');
    expect(expired.deadlineExpired(1200)).toBe('breach');
    expect(expired.firstToken(1300)).toBeUndefined(); // the token that raced the deadline
    expect(expired.status(503)).toBeUndefined();
    expect(expired.unknown()).toBeUndefined();

    const streamed = controller.startAttempt('preferred');
    expect(streamed.status(200)).toBeUndefined(); // headers are no sample
    expect(streamed.firstToken(300)).toBe('ok');
    expect(streamed.deadlineExpired(1000)).toBeUndefined();

    const failed = controller.startAttempt('preferred');
    expect(failed.unknown()).toBe('unknown');
    expect(failed.firstToken(10)).toBeUndefined();

    expect(controller.snapshot()).toMatchObject({ samples: 2, breaches: 1 });
  });

  it('counts preferred attempts in flight until they end, once each', async () => {
    const { controller, read } = controllerFixture();
    const a = controller.startAttempt('preferred');
    const b = controller.startAttempt('preferred');
    const alternate = controller.startAttempt('alternate');
    expect(controller.inFlight).toBe(2);
    expect(await read('aimd_in_flight')).toBe(2);
    a.firstToken(OK_MS);
    expect(controller.inFlight).toBe(2); // the stream is still running after its first token
    a.end();
    a.end();
    alternate.end();
    expect(controller.inFlight).toBe(1);
    expect(await read('aimd_in_flight')).toBe(1);
    b.end();
    expect(await read('aimd_in_flight')).toBe(0);
  });

  it('treats an attempt that ends without an outcome as no sample', async () => {
    const { controller, read } = controllerFixture();
    const probe = controller.startAttempt('preferred'); // for example a non-strict stream
    probe.status(200);
    probe.end();
    expect(controller.snapshot().samples).toBe(0);
    expect(await read('aimd_unknown_total')).toBe(0);
  });
});

describe('share controller: selection', () => {
  it('prefers the first provider with probability f, drawing nothing at f = 1', () => {
    const random = scripted([0.49, 0.5, 0.999]);
    const { controller } = controllerFixture({}, random);
    expect(controller.preferFirst()).toBe(true);
    expect(random.drawn()).toBe(0);
    feed(controller, 'bbbb'); // f = 0.5
    expect(controller.preferFirst()).toBe(true); // 0.49 < 0.5
    expect(controller.preferFirst()).toBe(false); // 0.5
    expect(controller.preferFirst()).toBe(false);
    expect(random.drawn()).toBe(3);
  });

  it('starts at the next provider when not preferring the first, keeping the preferred one reachable', () => {
    const { controller } = controllerFixture({}, scripted([0.9, 0.1]));
    const providers = ['a', 'b', 'c'];
    expect(controller.orderFor(providers)).toBe(providers);
    feed(controller, 'bbbb');
    expect(controller.orderFor(providers)).toEqual(['b', 'a', 'c']);
    expect(controller.orderFor(providers)).toEqual(['a', 'b', 'c']);
  });

  it('applies due time transitions before choosing', () => {
    const { controller, clock } = controllerFixture({ idle_recovery_ms: 1000 }, scripted([0.55]));
    feed(controller, 'bbbb');
    clock.advance(1000);
    expect(controller.preferFirst()).toBe(true); // 0.55 < 0.625, the share after the idle step
  });

  it('with dwell_ms 0 steps up at each evaluation while healthy', () => {
    const { controller } = controllerFixture({ dwell_ms: 0 });
    feed(controller, 'bbbb oooo');
    expect(controller.share).toBe(0.5);
    controller.tick();
    expect(controller.share).toBe(0.625);
    controller.tick();
    expect(controller.share).toBe(0.75);
  });
});

describe('share controller: parked and retired', () => {
  it('freezes the share and the window while parked, and resumes without back pay', () => {
    const { controller, clock, shareAfter } = controllerFixture({ idle_recovery_ms: 5000 });
    feed(controller, 'bbbb oo'); // 0.5, two samples
    controller.park();
    expect(controller.state).toBe('parked');
    feed(controller, 'bbbb'); // late outcomes of requests from before the reload
    clock.advance(60_000);
    controller.tick();
    expect(controller.snapshot()).toMatchObject({ share: 0.5, samples: 2 });

    controller.resume();
    expect(controller.snapshot()).toMatchObject({ state: 'active', lastAdjustmentAt: 60_000 });
    expect(shareAfter(4999)).toBe(0.5);
    expect(shareAfter(1)).toBe(0.625);
  });

  it('keeps counting the events of a retired controller but never moves its share again', async () => {
    const { controller, read } = controllerFixture();
    feed(controller, 'bbbb');
    controller.retire();
    feed(controller, 'oooo oooo');
    controller.observeStatus(503);
    controller.resume(); // only a parked controller resumes
    expect(controller.snapshot()).toMatchObject({ state: 'retired', share: 0.5, samples: 0 });
    expect(await read('first_token_seconds_count', { role: 'preferred' })).toBe(12);
    expect(await read('aimd_overload_breaches_total', { status: '503' })).toBe(1);
    expect(await read('aimd_window_samples')).toBe(0);
  });
});
