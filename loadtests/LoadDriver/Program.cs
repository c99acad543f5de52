using DroneDelivery.LoadDriver.Cli;

return await LoadDriverCommand.RunAsync(args, new CliConsole(Console.Out, Console.Error, IsTerminal: !Console.IsOutputRedirected));
