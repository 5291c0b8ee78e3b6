package pgbackend

// RoutineVersion is routineVersion, for the external tests.
const RoutineVersion = routineVersion
