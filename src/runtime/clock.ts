// The clock port lives with the log (the lowest layer); re-exported here for the runtime's users.
export { systemClock, type Clock } from "../events/clock.ts";
