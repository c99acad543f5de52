namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// The generated hostile-input tests run one after another and beside no other test: each keeps a thread busy for its
/// whole run, and side by side they would starve the thread pool their bounded cases and the emulator run on.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class HostileInputCollection
{
    public const string Name = "hostile input";
}
