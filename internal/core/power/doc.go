// Package power lets a cluster save energy at low load by putting some nodes to sleep
// while every range stays readable and writable (paper 003, a power-thrifty in-memory
// store). It owns:
//
//   - the power states a node goes through (State: active, draining, asleep, waking);
//   - the energy model of a node that sleeps (Profile, with the paper's S4 and S1
//     figures, and Meter, which integrates a node's power over its transitions);
//   - the sleep rule (ShortOfAwake): a node sleeps only when every range it holds keeps
//     as many awake replicas as the levels its keyspace is used at need (Levels); at ONE,
//     one awake replica, which the ring's tiers make possible: every replica set keeps a
//     tier-0 member that never sleeps;
//   - the power controller, which decides from load samples how many nodes sleep and
//     which (Controller);
//   - the gate, which answers for a sleeping node so that clients do not wait for it.
//
// Nothing here runs a goroutine, reads a clock or does I/O: times come in as arguments,
// so the node's lifecycle, the simulator and the tests drive the same code.
package power
