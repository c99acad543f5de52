using DroneDelivery.Emulators.CosmosDb;
using DroneDelivery.Emulators.CosmosDb.Configuration;

var parse = CommandLine.Build().Parse(args);
if (CommandLine.Error(parse) is null && parse.Action is not null)
{
    return await parse.InvokeAsync(); // --help
}

CosmosEmulator emulator;
try
{
    emulator = await CosmosEmulator.StartAsync(CommandLine.Options(parse));
}
catch (CosmosEmulatorConfigurationException e)
{
    await Console.Error.WriteLineAsync($"Cosmos DB emulator cannot start: {e.Message}");
    return CommandLine.InvalidConfigurationExitCode;
}
catch (IOException e)
{
    await Console.Error.WriteLineAsync($"Cosmos DB emulator cannot listen: {e.Message}");
    return CommandLine.CannotListenExitCode;
}

await using (emulator)
{
    // The one line tools wait for; see docs/emulators/cosmos-db.md.
    Console.WriteLine($"Cosmos DB emulator ready on {emulator.Endpoint}");
    await emulator.WaitForShutdownAsync();
}

return 0;
