using DroneDelivery.Emulators.CosmosDb;
using DroneDelivery.Emulators.CosmosDb.Configuration;

if (args is ["--help"] or ["-h"])
{
    Console.WriteLine(CommandLine.Usage);
    return 0;
}

CosmosEmulator emulator;
try
{
    emulator = await CosmosEmulator.StartAsync(CommandLine.Parse(args));
}
catch (CosmosEmulatorConfigurationException e)
{
    await Console.Error.WriteLineAsync($"Cosmos DB emulator cannot start: {e.Message}");
    return 2;
}
catch (IOException e)
{
    await Console.Error.WriteLineAsync($"Cosmos DB emulator cannot listen: {e.Message}");
    return 3;
}

await using (emulator)
{
    // The one line tools wait for; see docs/emulators/cosmos-db.md.
    Console.WriteLine($"Cosmos DB emulator ready on {emulator.Endpoint}");
    await emulator.WaitForShutdownAsync();
}

return 0;
