using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Hosting;
using DroneDelivery.Workflow;

var builder = WebApplication.CreateBuilder(args);
builder.AddServiceDefaults("workflow");
builder.AddWorkflowServices();
var app = builder.Build();
app.MapDefaultEndpoints();
return ServiceHost.Run(app);
