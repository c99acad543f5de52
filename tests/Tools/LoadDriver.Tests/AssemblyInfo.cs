// Several tests measure timing against a loopback server; running them one at a time keeps a
// shared 2-core machine from turning scheduling noise into false failures.
[assembly: CollectionBehavior(DisableTestParallelization = true)]
