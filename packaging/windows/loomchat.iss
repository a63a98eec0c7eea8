; Inno Setup script: a Windows installer for the PyInstaller bundle.
;
;   iscc /DVersion=0.1.0 /DBundle=build\dist\loomchat /DOutDir=build packaging\windows\loomchat.iss
;
; Per-user install by default (no administrator needed), Start-menu entry, optional desktop
; icon, uninstaller in Apps & Features. Conversations and settings live in the user's
; %APPDATA%\Loomchat and stay when the app is uninstalled.
#ifndef Version
  #define Version "0.1.0"
#endif
#ifndef Bundle
  #define Bundle "..\..\build\dist\loomchat"
#endif
#ifndef OutDir
  #define OutDir "..\..\build"
#endif

[Setup]
AppId={{6E0B7C1A-3F5D-4C8E-9A51-2B7F4D0C9E11}
AppName=Loomchat
AppVersion={#Version}
AppPublisher=Loomchat
DefaultDirName={autopf}\Loomchat
DefaultGroupName=Loomchat
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutDir}
OutputBaseFilename=Loomchat-{#Version}-windows-x64-setup
SetupIconFile={#Bundle}\..\..\icons\loomchat.ico
UninstallDisplayIcon={app}\loomchat.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#Bundle}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\Loomchat"; Filename: "{app}\loomchat.exe"
Name: "{group}\Uninstall Loomchat"; Filename: "{uninstallexe}"
Name: "{autodesktop}\Loomchat"; Filename: "{app}\loomchat.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\loomchat.exe"; Description: "{cm:LaunchProgram,Loomchat}"; Flags: nowait postinstall skipifsilent
